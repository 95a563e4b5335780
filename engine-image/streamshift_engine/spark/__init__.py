"""PySpark jobs: the Nexmark generator to Kafka and the reference oracle.

Everything here imports pyspark lazily through `session.spark_session`, so the engine works
without the `spark` extra installed.
"""
