{#- Upkeep of the delta and iceberg tables joinery_upsert merges into: each MERGE leaves deletion
    vectors (delta) or delete files (iceberg) and small files, and every version's files stay until
    vacuumed or expired. Run it as an operation, e.g. daily:
    dbt run-operation joinery.maintain --args '{relation: analytics.customers}' -#}

{% macro maintain(relation, retain_hours=168, optimize=true, allow_short_retention=false) %}
    {{ return(adapter.dispatch('maintain', 'joinery')(relation, retain_hours, optimize, allow_short_retention)) }}
{% endmacro %}

{% macro default__maintain(relation, retain_hours=168, optimize=true, allow_short_retention=false) %}
    {% set parts = joinery._maintain_name_parts(relation) %}
    {% do joinery._maintain_check_arguments('maintain', retain_hours, optimize, allow_short_retention) %}
    {% set table_sql = joinery._maintain_table_sql(parts) %}
    {% set provider = joinery._maintain_provider(table_sql) %}
    {% if provider == 'delta' %}
        {% do joinery._maintain_delta(table_sql, retain_hours, optimize, allow_short_retention) %}
    {% elif provider == 'iceberg' %}
        {% do joinery._maintain_iceberg(relation, parts, retain_hours, optimize) %}
    {% elif provider is none %}
        {{ joinery._raise_argument_error('maintain', 'relation', table_sql, 'no table provider found (is it a '
            ~ 'view?); maintain keeps delta and iceberg tables') }}
    {% else %}
        {{ joinery._raise_argument_error('maintain', 'relation', table_sql, 'it is a ' ~ provider ~ ' table; '
            ~ 'maintain keeps delta and iceberg tables (a joinery_upsert table of another format deletes '
            ~ 'its superseded versions itself)') }}
    {% endif %}
    {{ log('joinery.maintain ' ~ table_sql ~ ': ' ~ provider ~ (' compacted, ' if optimize else ' ')
        ~ 'files of versions older than ' ~ retain_hours ~ ' hours removed', info=true) }}
{% endmacro %}


{% macro _maintain_check_arguments(macro_name, retain_hours, optimize, allow_short_retention) %}
    {#- The arguments maintain and maintain_all share, checked before any statement is sent. -#}
    {% if retain_hours is not number or retain_hours is boolean or retain_hours < 0 %}
        {{ joinery._raise_argument_error(macro_name, 'retain_hours', retain_hours,
            'expected a number of hours >= 0: how long the files of older table versions are kept') }}
    {% endif %}
    {% for name, value in {'optimize': optimize, 'allow_short_retention': allow_short_retention}.items()
        if value is not boolean %}
        {{ joinery._raise_argument_error(macro_name, name, value, 'expected true or false') }}
    {% endfor %}
{% endmacro %}


{% macro _maintain_table_sql(parts) %}
    {% set quoted = [] %}
    {% for part in parts %}
        {% do quoted.append(joinery._quote_identifier(part)) %}
    {% endfor %}
    {{ return(quoted | join('.')) }}
{% endmacro %}


{% macro _maintain_provider(table_sql) %}
    {#- The table's provider (delta, iceberg, parquet, hive, ...) from its description; none for a view. -#}
    {% for row in run_query('describe table extended ' ~ table_sql).rows if (row[0] or '') | trim == 'Provider' %}
        {{ return(row[1] | trim | lower) }}
    {% endfor %}
    {{ return(none) }}
{% endmacro %}


{% macro _maintain_name_parts(relation) %}
    {#- A relation, or its name as a string (`schema.table`, `catalog.schema.table`), as name parts. -#}
    {% if relation is string %}
        {% set parts = relation.split('.') %}
    {% elif relation.identifier is defined and relation.identifier %}
        {#- The catalog from a catalog-qualified schema (`iceberg.<namespace>`, docs/iceberg.md). -#}
        {% set parts = [relation.database or joinery.schema_catalog(relation), (relation.schema or '').split('.')[-1],
            relation.identifier] | reject('none') | list %}
    {% else %}
        {% set parts = [] %}
    {% endif %}
    {% set named = namespace(ok=parts | length in [2, 3]) %}
    {% for part in parts if not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', part | string) %}
        {% set named.ok = false %}
    {% endfor %}
    {% if not named.ok %}
        {{ joinery._raise_argument_error('maintain', 'relation', relation | string, 'expected a relation, or '
            ~ "a table's name as 'schema.table' or 'catalog.schema.table'") }}
    {% endif %}
    {{ return(parts) }}
{% endmacro %}


{% macro _maintain_delta(table_sql, retain_hours, optimize, allow_short_retention) %}
    {#- OPTIMIZE bin-packs the small files hourly MERGEs add; REORG ... APPLY (PURGE) rewrites the
        files that still carry deletion vectors, so deleted rows leave the data files; VACUUM then
        deletes files no version of the last `retain_hours` reads. -#}
    {% set checked_hours = 168 %}
    {% if retain_hours < checked_hours and not allow_short_retention %}
        {{ joinery._raise_argument_error('maintain', 'retain_hours', retain_hours, 'Delta refuses to vacuum '
            ~ 'with a retention under ' ~ checked_hours ~ ' hours (a reader or writer still using an older '
            ~ 'version could fail, and time travel that far back ends); pass allow_short_retention=true '
            ~ 'to vacuum anyway (it sets spark.databricks.delta.retentionDurationCheck.enabled=false for it)') }}
    {% endif %}
    {% if optimize %}
        {% do run_query('optimize ' ~ table_sql) %}
        {% do run_query('reorg table ' ~ table_sql ~ ' apply (purge)') %}
    {% endif %}
    {% if retain_hours < checked_hours %}
        {% do run_query('set spark.databricks.delta.retentionDurationCheck.enabled = false') %}
    {% endif %}
    {% do run_query('vacuum ' ~ table_sql ~ ' retain ' ~ retain_hours ~ ' hours') %}
    {% if retain_hours < checked_hours %}
        {% do run_query('reset spark.databricks.delta.retentionDurationCheck.enabled') %}
    {% endif %}
{% endmacro %}


{% macro _maintain_iceberg(relation, parts, retain_hours, optimize) %}
    {#- Iceberg's procedures, in the table's catalog: compact data files and position deletes, then
        expire snapshots older than `retain_hours` (their files go with them), keeping the last. -#}
    {% if parts | length < 3 %}
        {{ joinery._raise_argument_error('maintain', 'relation', parts | join('.'), 'an iceberg table is '
            ~ "maintained through its catalog's procedures: name it with its catalog, as "
            ~ "'catalog.schema.table' (or a relation whose schema names its catalog, as 'iceberg.<namespace>')") }}
    {% endif %}
    {% set procedures = parts[0] ~ '.system.' %}
    {% set table = joinery._sql_string(parts[1] ~ '.' ~ parts[2]) %}
    {% if optimize %}
        {% do run_query('call ' ~ procedures ~ 'rewrite_data_files(table => ' ~ table ~ ')') %}
        {% do run_query('call ' ~ procedures ~ 'rewrite_position_delete_files(table => ' ~ table ~ ')') %}
    {% endif %}
    {#- The procedure takes a literal only: the cutoff is read first, in the session's time zone. -#}
    {% set cutoff = run_query('select cast(current_timestamp() - make_dt_interval(0, ' ~ retain_hours
        ~ ') as string)').rows[0][0] %}
    {% do run_query('call ' ~ procedures ~ 'expire_snapshots(table => ' ~ table ~ ", older_than => timestamp '"
        ~ cutoff ~ "', retain_last => 1)") %}
{% endmacro %}
