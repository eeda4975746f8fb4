{#- The bench project's table formats: a case runs the same models once per format (`--vars
    {bench_format: delta}`), and each format's tables get their own names so that they sit side by
    side in schema `bench`: parquet keeps the model's name, another format appends `_<format>`. -#}

{% macro generate_alias_name(custom_alias_name=none, node=none) -%}
    {%- set name = custom_alias_name or node.name -%}
    {%- set format = var('bench_format', 'parquet') -%}
    {{ name if format == 'parquet' else name ~ '_' ~ format }}
{%- endmacro %}


{% macro bench_upsert_input(base, changes, incremental) %}
    {#- The upsert comparison's input: the base table on a first build, then only the changed rows
        the case lands before each run (`incremental`: the materialization's own is_incremental()). -#}
    {{ return('select * from ' ~ (source('bench', changes) if incremental else source('bench', base))) }}
{% endmacro %}


{% macro generate_schema_name(custom_schema_name, node) %}
    {#- joinery's rule: a model of file_format 'iceberg' lands in the Iceberg catalog (namespace
        `bench`), the others in schema `bench` (docs/iceberg.md, "In your own project"). -#}
    {{ return(joinery.catalog_schema_name(custom_schema_name, node)) }}
{% endmacro %}
