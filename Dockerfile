# One image for every Spark node of docker-compose.yml (master, workers, driver): Java 17,
# Python 3.11, and this project installed with pip (pyspark comes with it; SPARK_HOME is the
# pip pyspark package, whose bin/ has spark-class and spark-submit). Executors import
# minipaimon from this same installation: PYSPARK_PYTHON is the image's python3.
FROM python:3.11.13-slim-bookworm

RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/minipaimon
COPY pyproject.toml README.md ./
COPY minipaimon_core minipaimon_core
COPY minipaimon_spark minipaimon_spark
COPY pyspark_minipaimon pyspark_minipaimon
COPY scripts/demo_job.py scripts/demo_job.py
RUN pip install --no-cache-dir --disable-pip-version-check ".[spark]"

# spark-conf/ is mounted here by docker-compose.yml (a copy is baked in for plain docker run).
COPY spark-conf spark-conf
ENV SPARK_HOME=/usr/local/lib/python3.11/site-packages/pyspark \
    SPARK_CONF_DIR=/opt/minipaimon/spark-conf \
    PYSPARK_PYTHON=/usr/local/bin/python3
ENV PATH=${SPARK_HOME}/bin:${PATH}
