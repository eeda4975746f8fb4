{#- joinery's own project (examples, tests, `make demo`) names schemas with catalogs:
    `schema='iceberg.<name>'` puts a model in the Iceberg catalog. A project that installs joinery
    calls joinery.catalog_schema_name from its own generate_schema_name the same way. -#}

{% macro generate_schema_name(custom_schema_name, node) %}
    {{ return(joinery.catalog_schema_name(custom_schema_name, node)) }}
{% endmacro %}
