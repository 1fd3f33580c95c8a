"""tapelens on Apache Spark: the session, the engine's settings, the canonical tables as Delta
Lake tables and the loader that writes them (docs/scaling.md, "Running on Spark").

Nothing here is imported by the PostgreSQL path: pyspark and delta-spark are the optional
`spark` dependencies, imported only when the engine is `spark`.
"""
