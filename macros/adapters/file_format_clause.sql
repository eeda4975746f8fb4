{#- dbt-spark's `using <file_format>` clause of every table it creates (table, incremental, seed,
    snapshot), checked first against the catalog the table goes in (joinery.validate_catalog_format).
    Dispatched in the `dbt` namespace, as list_relations.sql. -#}

{% macro spark__file_format_clause() %}
    {% do joinery.validate_catalog_format(this, config.get('file_format')) %}
    {{ return(dbt.spark__file_format_clause()) }}
{% endmacro %}
