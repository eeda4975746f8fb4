{#- The one statement a run sends to learn what it is about to write: the columns and types of the
    changed rows and of the table, read from Spark's analysis of an empty form of both, the time on
    Spark's clock, and, on an incremental run, the figures of the changed rows (their count, the
    most rows of one key, their partitions, the ranges of their first key column, their versioned
    deletes, the newest value of the watermark column), computed in the same statement from the
    rows the run staged once (pipeline/stage.sql). Both commit paths read it. -#}

{% macro _upsert_preflight(rows, target, settings, with_stats=false, companion=none, with_ranges=false,
    names=none) %}
    {#- {'columns': [{name, type}] of the rows, 'target_columns': the table's (none without
        `target`), 'started': the time as text, 'stats': the figures (_upsert_stats_sql) or none}.
        `rows`: the staged changes (a view name) or a SELECT in parentheses; `companion`: the model's
        tombstones table, when it has one (its held keys count in the figures); `with_ranges`: the key
        ranges too (a MERGE's, a window over every changed key); `names`: the rows' column names,
        when the run knows them already. -#}
    {% set parts = ["to_json(struct(changed.*), map('ignoreNullFields', 'false'))",
        'typeof(struct(changed.*))', "cast(current_timestamp() as string)"] %}
    {% set sources = ['(select 1 as joinery_one) as joinery_one',
        'left join (select * from ' ~ rows ~ ' limit 0) as changed on true'] %}
    {% if target is not none %}
        {% do parts.extend(["to_json(struct(target.*), map('ignoreNullFields', 'false'))",
            'typeof(struct(target.*))']) %}
        {% do sources.append('left join (select * from ' ~ target ~ ' limit 0) as target on true') %}
    {% endif %}
    {% if with_stats %}
        {% do parts.append('stats.*') %}
        {% set stats_sql = joinery._upsert_stats_sql(rows, settings, companion, with_ranges, names) %}
        {% do sources.append('cross join (\n' ~ stats_sql ~ '\n) as stats') %}
    {% endif %}
    {% set row = run_query('select ' ~ parts | join(', ') ~ '\nfrom ' ~ sources | join('\n')).rows[0] %}
    {% set found = {'columns': joinery._row_columns(row[0], row[1]), 'started': row[2],
        'target_columns': joinery._row_columns(row[3], row[4]) if target is not none else none,
        'stats': none} %}
    {% if with_stats %}
        {% set at = 5 if target is not none else 3 %}
        {% do found.update({'stats': {'rows': row[at] | int, 'live_rows': row[at + 1] | int,
            'duplicates': row[at + 2] | int, 'duplicate_key': row[at + 3], 'partitions': row[at + 4],
            'key_ranges': fromjson(row[at + 5] or '[]'), 'versioned_deletes': row[at + 6] | int,
            'watermark': (fromjson(row[at + 7] or '{}') or {}).get('value')}}) %}
        {% do found.stats.update({'tombstone_changes': found.stats.rows - found.stats.live_rows + row[at + 8] | int}) %}
    {% endif %}
    {{ return(found) }}
{% endmacro %}


{% macro _upsert_stats_sql(rows, settings, companion=none, with_ranges=true, names=none) %}
    {#- One row of the changed rows' figures: rows, live rows, the most rows of one key and that key
        (JSON), their partitions, the ranges of the first key column (common/key_ranges.sql), the
        deletes that carry a version (tombstones.sql records those), and the newest value of the
        watermark column (the last `tombstones` column: the arrival column the run's note keeps).
        Columns are named as configured (Spark resolves names ignoring case; a missing one fails the
        statement naming it). The delete marker and the versions may be absent from the SELECT, so
        they are read from the row as JSON; their spelling is checked from the same statement. -#}
    {% set key_struct = [] %}
    {% for key in settings.unique_key %}
        {% do key_struct.append(joinery._sql_string(key) ~ ', ' ~ joinery._quote_identifier(key)) %}
    {% endfor %}
    {#- With the rows' column `names` known (a first build checked them), the marker and versions are
        read as columns: reading them from each row as JSON costs more than the rest on a whole table. -#}
    {% set marker = joinery._upsert_json_field_sql(settings.deleted_column, 'boolean') if names is none
        else joinery._quote_identifier(joinery._find_column(names, settings.deleted_column))
            if joinery._find_column(names, settings.deleted_column) else 'false' %}
    {% set versions = [] %}
    {% for column in settings.tombstones or [] %}
        {% do versions.append((joinery._upsert_json_field_sql(column, 'string') if names is none
            else joinery._quote_identifier(column)) ~ ' is not null') %}
    {% endfor %}
    {% set versioned = 'count_if(coalesce(' ~ marker ~ ', false)' ~ (' and (' ~ versions | join(' or ') ~ ')'
        if versions else ' and false') ~ ')' %}
    {% set watermark = 'max(' ~ joinery._quote_identifier(settings.tombstones[-1]) ~ ')'
        if settings.tombstones else 'cast(null as string)' %}
    {% set casts = joinery._partition_casts(settings.partition_by) %}
    {{ return('select coalesce(sum(n), 0), coalesce(sum(live), 0), coalesce(max(n), 0), max_by(key_json, n), '
        ~ ('to_json(array_sort(array_distinct(flatten(collect_set(partitions)))))' if casts else 'cast(null as string)')
        ~ ',\n    ' ~ (joinery._key_ranges_sql('select * from ' ~ rows, settings.unique_key[0], 16) if with_ranges else "'[]'")
        ~ ',\n    coalesce(sum(versioned), 0), '
        ~ "to_json(named_struct('value', max(watermark)), map('timestampFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSSXXX')),\n    "
        ~ joinery._upsert_held_live_sql(rows, settings, marker, companion) ~ '\n'
        ~ 'from (select count(*) as n, count_if(not coalesce(' ~ marker ~ ', false)) as live, to_json(named_struct('
        ~ key_struct | join(', ') ~ ')) as key_json, ' ~ versioned ~ ' as versioned, ' ~ watermark ~ ' as watermark'
        ~ (', collect_set(array(' ~ casts | join(', ') ~ ')) as partitions' if casts else '') ~ '\n'
        ~ '      from ' ~ rows ~ ' group by ' ~ joinery._quoted_column_list(settings.unique_key) ~ ')') }}
{% endmacro %}


{% macro _upsert_held_live_sql(rows, settings, marker, companion) %}
    {#- A scalar subquery: the live rows of `rows` whose key `companion` holds a record for (0 without
        a companion). -#}
    {% if companion is none %}
        {{ return('0') }}
    {% endif %}
    {{ return('(select count(*) from ' ~ rows ~ ' as changed left semi join ' ~ companion ~ ' as held on '
        ~ joinery._key_match(settings.unique_key, 'changed', 'held') ~ ' where not coalesce('
        ~ marker | replace('struct(*)', 'struct(changed.*)') ~ ', false))') }}
{% endmacro %}


{% macro _upsert_json_field_sql(column, type) %}
    {#- A column of the row that may be absent from it, read from the row as JSON (NULL when absent). -#}
    {% set path = joinery._sql_string('$.' ~ column) %}
    {{ return('try_cast(get_json_object(to_json(struct(*)), ' ~ path ~ ') as ' ~ type ~ ')') }}
{% endmacro %}
