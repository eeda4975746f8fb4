"""Tooling around the joinery dbt project: Java check, local Spark Thrift server, dbt runner."""
