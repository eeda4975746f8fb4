{#- The bench project's table formats and widths: a case runs the same models once per format
    (`--vars {bench_format: delta}`) and width (`bench_width: wide`: the dbt-run cases' inputs with
    about 30 columns), and each gets its own table names so that they sit side by side in schema
    `bench`: parquet keeps the model's name, another format appends `_<format>`, the wide width `_wide`. -#}

{% macro generate_alias_name(custom_alias_name=none, node=none) -%}
    {%- set name = custom_alias_name or node.name -%}
    {%- set format = var('bench_format', 'parquet') -%}
    {%- set name = name if format == 'parquet' else name ~ '_' ~ format -%}
    {{ name ~ bench_width_suffix() }}
{%- endmacro %}


{% macro bench_width_suffix() %}
    {#- `_wide` for the wide inputs and tables, '' for the narrow ones. -#}
    {{ return('' if var('bench_width', 'narrow') == 'narrow' else '_' ~ var('bench_width')) }}
{% endmacro %}


{% macro bench_source(name) %}
    {#- The case's input table `name` of this run's width (`<name>_wide` for the wide one). -#}
    {{ return(source('bench', name ~ bench_width_suffix())) }}
{% endmacro %}


{% macro bench_merge_properties() %}
    {#- The table properties of dbt-spark's `incremental` merge baselines: on iceberg the merge-on-read
        properties joinery_upsert gives its own tables, so that both sides write delete files rather
        than rewriting data files (delta tables get deletion vectors from the session's default). None
        otherwise: dbt-spark writes an empty `tblproperties ()` for an empty mapping. -#}
    {{ return({'format-version': '2', 'write.delete.mode': 'merge-on-read', 'write.update.mode': 'merge-on-read',
        'write.merge.mode': 'merge-on-read'} if var('bench_format', 'parquet') == 'iceberg' else none) }}
{% endmacro %}


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
