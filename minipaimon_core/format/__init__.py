"""Apache Paimon's on-disk structures and their codecs, one module per structure.

The rest of the engine talks to the structs these modules produce, never to bytes.
"""
