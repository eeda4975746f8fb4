{#- The tombstones a joinery_upsert model with loaded_at keeps (deleted keys with the version that
    deleted them, in its companion table): reading them, the delete markers that clear them,
    and tombstone_retention as SQL. -#}

{% macro _compaction_tombstones_sql(target, plan, settings, watermark_sql) %}
    {#- The model's tombstones (each key's newest record in its companion, joinery_upsert's
        _upsert_tombstones_sql) as subqueries of its key and version columns: {'all', 'live' (those
        tombstone_retention keeps)}; none when the model keeps no tombstones or has no companion yet.
        A tombstone expires when its loaded_at is older than the watermark the run starts from minus
        the retention: an expired one holds off nothing, and the next full build drops it. -#}
    {% if not settings.tombstones %}
        {{ return(none) }}
    {% endif %}
    {% set companion = joinery.upsert_tombstones_relation(target) %}
    {% if adapter.get_relation(database=companion.database, schema=companion.schema,
        identifier=companion.identifier) is none %}
        {{ return(none) }}
    {% endif %}
    {% set all_sql = joinery._upsert_tombstones_sql(companion, settings.key,
        joinery._compaction_version_columns(settings)) %}
    {% set retention = settings.tombstone_retention %}
    {% if retention is none or watermark_sql is none %}
        {{ return({'all': all_sql, 'live': all_sql}) }}
    {% endif %}
    {% set expired = 'coalesce(' ~ joinery._quote_identifier(settings.loaded_at) ~ ' < ' ~ watermark_sql ~ ' - '
        ~ joinery._compaction_retention_sql(retention, joinery._plan_entry(plan, settings.loaded_at).type) ~ ', false)' %}
    {{ return({'all': all_sql, 'live': '(select * from ' ~ all_sql ~ ' as tombstones where not ' ~ expired ~ ')'}) }}
{% endmacro %}


{% macro _compaction_cleared_sql(plan, settings, alias) %}
    {#- The SELECT list of a delete marker whose version columns are NULL, for the key in `alias`:
        joinery_upsert deletes the key from the table, and clears its tombstone. -#}
    {% set columns = [] %}
    {% for entry in plan %}
        {% set value = alias ~ '.' ~ joinery._quote_identifier(entry.name) if entry.name in settings.key else 'null' %}
        {% do columns.append('cast(' ~ value ~ ' as ' ~ entry.type ~ ') as ' ~ joinery._quote_identifier(entry.name)) %}
    {% endfor %}
    {{ return('select\n    ' ~ columns | join(',\n    ') ~ ',\n    true as '
        ~ joinery._quote_identifier(settings.marker)) }}
{% endmacro %}


{% macro _compaction_retention_sql(retention, type) %}
    {#- tombstone_retention as the SQL subtracted from a loaded_at of `type`: an interval
        (`interval 30 day`) or a number; a kind that does not fit the type is an error. -#}
    {% set numeric = type | lower in ['tinyint', 'smallint', 'int', 'bigint', 'float', 'double']
        or (type | lower).startswith('decimal') %}
    {% if retention is string and not numeric %}
        {% set parts = modules.re.match('^\\s*([0-9]+)\\s*([a-z]+?)s?\\s*$', retention | lower) %}
        {{ return('interval ' ~ parts.group(1) ~ ' ' ~ parts.group(2)) }}
    {% elif retention is number and numeric %}
        {{ return(retention | string) }}
    {% endif %}
    {{ joinery._raise_argument_error('compact', 'tombstone_retention', retention, 'loaded_at is of type ' ~ type
        ~ (': expected a number' if numeric else ": expected an interval such as '30 days'")) }}
{% endmacro %}
