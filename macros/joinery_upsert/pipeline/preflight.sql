{#- The one statement a delta or iceberg run sends before it writes: the columns and types of the
    model's SELECT and of the table, read from Spark's analysis of an empty form of both (nothing
    is computed), the time on Spark's clock, and, where the run needs them before its commit
    statement, the figures of the changed rows (their count, the most rows of one key, their
    partitions), computed in the same statement. -#}

{% macro _upsert_preflight(sql, target, settings, with_stats=false) %}
    {#- {'columns': [{name, type}] of the SELECT, 'target_columns': the table's (none without
        `target`), 'started': the time as text, 'stats': upsert_preflight_stats or none}. -#}
    {% set parts = ["to_json(struct(changed.*), map('ignoreNullFields', 'false'))",
        'typeof(struct(changed.*))', "cast(current_timestamp() as string)"] %}
    {% set sources = ['(select 1 as joinery_one) as joinery_one',
        'left join (select * from (\n' ~ sql ~ '\n) limit 0) as changed on true'] %}
    {% if target is not none %}
        {% do parts.extend(["to_json(struct(target.*), map('ignoreNullFields', 'false'))",
            'typeof(struct(target.*))']) %}
        {% do sources.append('left join (select * from ' ~ target ~ ' limit 0) as target on true') %}
    {% endif %}
    {% if with_stats %}
        {% do parts.append('stats.*') %}
        {% do sources.append('cross join (\n' ~ joinery._upsert_preflight_stats_sql(sql, settings) ~ '\n) as stats') %}
    {% endif %}
    {% set row = run_query('select ' ~ parts | join(', ') ~ '\nfrom ' ~ sources | join('\n')).rows[0] %}
    {% set found = {'columns': joinery._upsert_row_columns(row[0], row[1]), 'started': row[2],
        'target_columns': joinery._upsert_row_columns(row[3], row[4]) if target is not none else none,
        'stats': none} %}
    {% if with_stats %}
        {% set offset = 5 if target is not none else 3 %}
        {% do found.update({'stats': {'rows': row[offset] | int, 'live_rows': row[offset + 1] | int,
            'duplicates': row[offset + 2] | int, 'duplicate_key': row[offset + 3], 'partitions': row[offset + 4]}}) %}
    {% endif %}
    {{ return(found) }}
{% endmacro %}


{% macro _upsert_preflight_stats_sql(sql, settings) %}
    {#- One row of the changed rows' figures, grouped by key: rows, live rows, the most rows of one key
        and that key (JSON), and the partitions they fall in (_upsert_preflight checks them). Columns
        are named as configured (Spark resolves names ignoring case; a missing one fails the
        statement naming it). The delete marker may be absent from the SELECT, so it is read from the
        row as JSON; its type and spelling are checked from the same statement's analysis. -#}
    {% set key_struct = [] %}
    {% for key in settings.unique_key %}
        {% do key_struct.append(joinery._sql_string(key) ~ ', ' ~ joinery._quote_identifier(key)) %}
    {% endfor %}
    {% set marker = "try_cast(get_json_object(to_json(struct(*)), "
        ~ joinery._sql_string('$.' ~ settings.deleted_column) ~ ') as boolean)' %}
    {% set casts = joinery._partition_casts(settings.partition_by) %}
    {{ return('select coalesce(sum(n), 0), coalesce(sum(live), 0), coalesce(max(n), 0), max_by(key_json, n), '
        ~ ('to_json(array_sort(array_distinct(flatten(collect_set(partitions)))))' if casts else 'cast(null as string)') ~ '\n'
        ~ 'from (select count(*) as n, count_if(not coalesce(' ~ marker ~ ', false)) as live, to_json(named_struct('
        ~ key_struct | join(', ') ~ ')) as key_json'
        ~ (', collect_set(array(' ~ casts | join(', ') ~ ')) as partitions' if casts else '') ~ '\n'
        ~ '      from (\n' ~ sql ~ '\n) group by ' ~ joinery._quoted_column_list(settings.unique_key) ~ ')') }}
{% endmacro %}


{% macro _upsert_row_columns(names_json, row_type) %}
    {#- [{name, type}] of a row: its field names in order from `names_json` (to_json of the row with
        NULL fields kept, so names are exact), their types from `row_type` (typeof(struct(...)),
        `struct<name:type,...>`, which does not quote names): each type runs from after `<name>:`
        to the next comma outside brackets. -#}
    {% set names = (fromjson(names_json) or {}).keys() | list %}
    {% set body = row_type[7:-1] %}
    {% set columns = [] %}
    {% set cursor = namespace(at=0) %}
    {% for name in names %}
        {% if body[cursor.at:cursor.at + name | length + 1] != name ~ ':' %}
            {{ joinery._upsert_fail('cannot read the type of column ' ~ name ~ ' from ' ~ row_type) }}
        {% endif %}
        {% set scan = namespace(depth=0, end=body | length) %}
        {% for at in range(cursor.at + name | length + 1, body | length) if scan.end == body | length %}
            {% if body[at] in '<(' %}
                {% set scan.depth = scan.depth + 1 %}
            {% elif body[at] in '>)' %}
                {% set scan.depth = scan.depth - 1 %}
            {% elif body[at] == ',' and scan.depth == 0 %}
                {% set scan.end = at %}
            {% endif %}
        {% endfor %}
        {% do columns.append({'name': name, 'type': body[cursor.at + name | length + 1:scan.end]}) %}
        {% set cursor.at = scan.end + 1 %}
    {% endfor %}
    {{ return(columns) }}
{% endmacro %}
