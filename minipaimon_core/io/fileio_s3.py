"""Amazon S3 and S3-compatible stores (MinIO, SeaweedFS, Ceph RGW, ...): settings and clients.

Settings come from connection options, falling back to the standard AWS environment:

| option                | environment                               | default                  |
|-----------------------|-------------------------------------------|--------------------------|
| `s3.endpoint`         | `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL` | AWS                      |
| `s3.access-key`       | `AWS_ACCESS_KEY_ID`                       | the AWS credential chain |
| `s3.secret-key`       | `AWS_SECRET_ACCESS_KEY`                   |                          |
| `s3.session-token`    | `AWS_SESSION_TOKEN`                       |                          |
| `s3.region`           | `AWS_REGION`, `AWS_DEFAULT_REGION`        | `us-east-1`              |
| `s3.path-style-access`| -                                         | true iff an endpoint is set |

Credentials are taken as a set: when ``s3.access-key`` is given, the secret and token come
from options only, never mixed with the environment's. ``http://`` endpoints are allowed
(test servers, a store on a private network). An endpoint holding credentials
(``http://KEY:SECRET@host``) is refused, not stripped: give them as ``s3.access-key`` /
``s3.secret-key`` (S3 signs requests with them; a URL's user info is no S3 credential). pyarrow's S3 filesystem does not read
``AWS_ENDPOINT_URL``, so the resolved endpoint is passed to both clients explicitly.

These are connection settings, not table options: they are never written into any table
file (see :mod:`minipaimon_core.io.fileio_resolve`), and :class:`S3Settings` never shows a
secret in ``repr`` or a message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs as pafs

from ..errors import InvalidArgumentError, redact_userinfo

PREFIX = "s3."
OPTIONS = ("s3.endpoint", "s3.access-key", "s3.secret-key", "s3.session-token", "s3.region",
           "s3.path-style-access")
DEFAULT_REGION = "us-east-1"
# request paths of the EC2 instance metadata service (IMDSv2 token, IAM role credentials)
_INSTANCE_METADATA = ("/latest/api/token", "/latest/meta-data/")


@dataclass(frozen=True)
class S3Settings:
    """Resolved S3 connection settings (implements ``ObjectStoreSettings``)."""

    endpoint: str | None = field(default=None, repr=False)  # shown by describe(), redacted
    region: str = DEFAULT_REGION
    path_style: bool = False
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    schemes: tuple[str, ...] = ("s3", "s3a")

    @classmethod
    def resolve(cls, options: Mapping[str, str] | None = None,
                env: Mapping[str, str] | None = None) -> S3Settings:
        """Settings from ``s3.*`` options over the AWS environment.

        Raises InvalidArgumentError (naming the option) for an unknown ``s3.*`` option, a
        malformed endpoint or path-style flag, or a key without its secret.
        """
        opts = {k.lower(): v for k, v in (options or {}).items() if k.lower().startswith(PREFIX)}
        unknown = sorted(set(opts) - set(OPTIONS))
        if unknown:
            raise InvalidArgumentError(
                f"unknown object-store option(s) {unknown}: the S3 options are {list(OPTIONS)}"
            )
        env = os.environ if env is None else env

        def pick(option: str, *variables: str) -> str | None:
            value = opts.get(option) or next((env[v] for v in variables if env.get(v)), None)
            return value.strip() if value else None

        endpoint = pick("s3.endpoint", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
        if endpoint is not None and not endpoint.startswith(("http://", "https://")):
            raise InvalidArgumentError(  # never the value: it may be a secret given here
                "option 's3.endpoint' (or AWS_ENDPOINT_URL) must be an http:// or https:// URL")
        if endpoint is not None and "@" in endpoint:
            raise InvalidArgumentError(
                "option 's3.endpoint' (or AWS_ENDPOINT_URL) holds credentials (user:password@ "
                "before the host): give them as 's3.access-key' and 's3.secret-key' (or "
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) and the endpoint without them")
        if "s3.access-key" in opts:
            access, secret, token = (opts.get("s3.access-key"), opts.get("s3.secret-key"),
                                     opts.get("s3.session-token"))
        else:
            access, secret, token = (pick("s3.access-key", "AWS_ACCESS_KEY_ID"),
                                     pick("s3.secret-key", "AWS_SECRET_ACCESS_KEY"),
                                     pick("s3.session-token", "AWS_SESSION_TOKEN"))
        if bool(access) != bool(secret):
            raise InvalidArgumentError(
                "give both 's3.access-key' and 's3.secret-key' (or AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY), or neither to use the AWS credential chain"
            )
        style = opts.get("s3.path-style-access")
        if style is not None and style.strip().lower() not in ("true", "false"):
            raise InvalidArgumentError("option 's3.path-style-access' must be true or false")
        path_style = endpoint is not None if style is None else style.strip().lower() == "true"
        region = pick("s3.region", "AWS_REGION", "AWS_DEFAULT_REGION") or DEFAULT_REGION
        return cls(endpoint=endpoint.rstrip("/") if endpoint else None, region=region,
                   path_style=path_style, access_key=access or None, secret_key=secret or None,
                   session_token=token or None)

    # -- ObjectStoreSettings ----------------------------------------------------------------

    def bucket_of(self, authority: str) -> str:
        return authority

    def make_store(self, bucket: str) -> Any:
        from obstore.store import S3Store

        config: dict[str, Any] = {"region": self.region,
                                  "virtual_hosted_style_request": not self.path_style}
        if self.endpoint:
            config["endpoint"] = self.endpoint
        if self.access_key and self.secret_key:
            config["access_key_id"] = self.access_key
            config["secret_access_key"] = self.secret_key
            if self.session_token:
                config["session_token"] = self.session_token
        client = {"allow_http": bool(self.endpoint and self.endpoint.startswith("http://")),
                  "connect_timeout": "5s", "timeout": "60s"}
        return S3Store(bucket, config=config, client_options=client)  # type: ignore[arg-type]

    def make_arrow_fs(self) -> pafs.FileSystem:
        kwargs: dict[str, Any] = {"region": self.region,
                                  "force_virtual_addressing": not self.path_style}
        if self.endpoint:
            scheme, _, host = self.endpoint.partition("://")
            kwargs["endpoint_override"] = host
            kwargs["scheme"] = scheme
        if self.access_key and self.secret_key:
            kwargs.update(access_key=self.access_key, secret_key=self.secret_key,
                          session_token=self.session_token)
        return pafs.S3FileSystem(**kwargs)

    def describe(self) -> str:
        return redact_userinfo(f"S3 endpoint {self.endpoint or 'AWS'} (region {self.region})")

    def redact(self, text: str) -> str:
        for secret in (self.secret_key, self.session_token, self.access_key):
            if secret:
                text = text.replace(secret, "***")
        return redact_userinfo(text)

    def identity(self) -> tuple[str, ...]:
        return ("s3", self.endpoint or "aws", self.region)

    def missing_credentials(self, detail: str) -> str | None:
        # Given no keys, obstore walks the AWS credential chain, whose last step asks the EC2
        # instance metadata service (a token PUT, then GETs under /latest/meta-data/). Off EC2
        # that fails (a 403 from a proxy, a refused connection): the user gave no credentials.
        if self.access_key is not None or not any(m in detail for m in _INSTANCE_METADATA):
            return None
        return ("no S3 credentials: give the options 's3.access-key' and 's3.secret-key' (or set "
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or run where the AWS credential "
                "chain finds some (an EC2 instance role, web identity); the chain's last step, "
                "asking the instance metadata service, failed")
