{#- dbt-spark's relation listing, for schemas that name a catalog (`iceberg.<namespace>`). Its own
    macro returns `show table extended`'s rows, whose namespace column is `<namespace>` without the
    catalog: dbt would then cache the tables under another schema and never find them (every run a
    first run). Spark 4 lists Iceberg tables with `show table extended` (SPARK-33393, the error
    dbt-adapters #490 and #485 hit on Spark 3 is gone), so one statement still gives each table's
    provider and columns. Dispatched in the `dbt` namespace: a project that installs joinery lists
    joinery before dbt in its `dispatch` config (docs/iceberg.md). -#}

{% macro spark__list_relations_without_caching(relation) %}
    {% if joinery.schema_catalog(relation) is none %}
        {{ return(dbt.spark__list_relations_without_caching(relation)) }}
    {% endif %}
    {% set listed = run_query('show table extended in ' ~ relation.schema ~ " like '*'") %}
    {#- The session's temporary views are listed in every namespace (isTemporary true); they are
        not the catalog's. A list of rows is what dbt-spark reads back, like the agate table. -#}
    {% set rows = [] %}
    {% for row in listed.rows if not row[2] %}
        {% do rows.append([relation.schema, row[1], row[2], row[3]]) %}
    {% endfor %}
    {{ return(rows) }}
{% endmacro %}
