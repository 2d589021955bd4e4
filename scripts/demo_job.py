"""The demo job's spark-submit entry point: ``minipaimon_spark.demo.main``.

    spark-submit --master spark://host:7077 scripts/demo_job.py [--warehouse s3://bucket/wh]

spark-submit runs a file with the file's directory first on ``sys.path``. Submitting
``minipaimon_spark/demo.py`` itself would put the package's own modules and subpackages
first on ``sys.path``, where they shadow top-level modules (the package's ``types.py``,
there before issue 41, shadowed the standard library's: the interpreter failed to start),
so submit this file, from a directory without package modules; it imports the installed
package.
"""

from minipaimon_spark.demo import main

if __name__ == "__main__":
    main()
