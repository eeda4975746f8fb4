{#- Tables in a Spark catalog other than the session catalog (an Iceberg catalog beside Delta's
    spark_catalog). dbt-spark names relations in two parts and refuses a database, so joinery puts
    the catalog in the schema: `iceberg.<namespace>` renders `iceberg.<namespace>.<table>`
    (docs/iceberg.md). -#}

{% macro catalog_schema_name(custom_schema_name, node) %}
    {{ return(adapter.dispatch('catalog_schema_name', 'joinery')(custom_schema_name, node)) }}
{% endmacro %}

{% macro default__catalog_schema_name(custom_schema_name, node) %}
    {#- generate_schema_name with catalogs: `<catalog>.<name>` names dbt's usual schema for <name>
        (`<target schema>_<name>`) in that catalog, so targets stay apart there too. A model of
        file_format 'iceberg' without a catalog goes to the first Iceberg catalog: an example whose
        format is a var then builds on iceberg too. Anything else is dbt's own rule. -#}
    {% set name = custom_schema_name | trim if custom_schema_name is not none else none %}
    {% set config = node.config if node is not none and node.config is defined else none %}
    {% set iceberg = config is not none and (config.get('file_format') or '') | lower == 'iceberg' %}
    {% if (name is none or '.' not in name) and not iceberg %}
        {{ return(default__generate_schema_name(name, node)) }}
    {% elif name is none or '.' not in name %}
        {{ return(joinery._iceberg_catalogs()[0] ~ '.' ~ default__generate_schema_name(name, node)) }}
    {% endif %}
    {% set parts = name.split('.') %}
    {% if not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*\\.[A-Za-z_][A-Za-z0-9_]*$', name) %}
        {{ joinery._raise_argument_error('catalog_schema_name', 'schema', name,
            "expected '<catalog>.<namespace>' (two identifiers), e.g. 'iceberg.sales'") }}
    {% endif %}
    {{ return(parts[0] ~ '.' ~ default__generate_schema_name(parts[1], node)) }}
{% endmacro %}


{% macro schema_catalog(relation) %}
    {{ return(adapter.dispatch('schema_catalog', 'joinery')(relation)) }}
{% endmacro %}

{% macro default__schema_catalog(relation) %}
    {#- The catalog a relation (or a `schema.table` / `catalog.schema.table` name) lives in, or none
        for a two-part name (the session's current catalog, spark_catalog unless changed). -#}
    {% if relation is string %}
        {% set parts = relation.split('.') %}
        {{ return(parts[0] if parts | length == 3 else none) }}
    {% endif %}
    {% set schema = relation.schema or '' %}
    {{ return(schema.split('.')[0] if '.' in schema else none) }}
{% endmacro %}


{% macro _iceberg_catalogs() %}
    {#- The catalogs that hold Iceberg tables: var `joinery_iceberg_catalogs` (default ['iceberg'],
        the catalog of joinery's Sparks). Add spark_catalog there when Iceberg's SparkSessionCatalog
        serves it. -#}
    {% set catalogs = var('joinery_iceberg_catalogs', ['iceberg']) %}
    {{ return([catalogs] if catalogs is string else catalogs | list) }}
{% endmacro %}


{% macro validate_catalog_format(relation, file_format) %}
    {{ return(adapter.dispatch('validate_catalog_format', 'joinery')(relation, file_format)) }}
{% endmacro %}

{% macro default__validate_catalog_format(relation, file_format) %}
    {#- An Iceberg table only in an Iceberg catalog, and only Iceberg tables in a catalog of its own:
        Spark's own errors for either ("Cannot open table: path is not set", "Unsupported format in
        USING") do not say which config is wrong. -#}
    {% if file_format is none %}
        {#- No `using` clause: the catalog's own default format. -#}
        {{ return(none) }}
    {% endif %}
    {% set catalog = joinery.schema_catalog(relation) or 'spark_catalog' %}
    {% set iceberg_catalogs = joinery._iceberg_catalogs() %}
    {% set file_format = file_format | lower %}
    {% if file_format == 'iceberg' and catalog not in iceberg_catalogs %}
        {{ joinery._raise_argument_error('validate_catalog_format', 'file_format', file_format, relation
            ~ ' is in catalog ' ~ catalog ~ ", which is not an Iceberg catalog; put the model in one with "
            ~ "schema='" ~ iceberg_catalogs[0] ~ ".<namespace>' (catalogs in var joinery_iceberg_catalogs: "
            ~ tojson(iceberg_catalogs) ~ '), or use another file_format') }}
    {% elif file_format != 'iceberg' and catalog in iceberg_catalogs and catalog != 'spark_catalog' %}
        {{ joinery._raise_argument_error('validate_catalog_format', 'file_format', file_format, relation
            ~ ' is in the Iceberg catalog ' ~ catalog ~ ", which holds only Iceberg tables (no views): use "
            ~ "file_format='iceberg' there, or a schema without the '" ~ catalog ~ ".' prefix") }}
    {% endif %}
{% endmacro %}


{% macro _describe_as_json(relation) %}
    {#- `describe table extended ... as json` of a relation, parsed. Spark has it only for a V1 table
        of spark_catalog: a Delta table there is a V2 table, as is every table of another catalog
        (NOT_SUPPORTED_COMMAND_FOR_V2_TABLE). So the relation is described through a temporary view
        of it, which has the same columns whatever the table's format or catalog: one path for all,
        two statements. The view is named by the relation and replaced by its next use; it holds
        no data. -#}
    {% set name = relation if relation is string else relation.render() %}
    {% set view = 'joinery_describe_' ~ local_md5(name)[:12] %}
    {% do run_query('create or replace temporary view ' ~ view ~ ' as select * from ' ~ name) %}
    {{ return(fromjson(run_query('describe table extended ' ~ view ~ ' as json').columns[0].values()[0])) }}
{% endmacro %}
