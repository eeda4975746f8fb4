{#- The model's changed rows, shared by both paths: staged once as a cached view, validated against
    the config, counted, and dropped at the end of the run or before any error (upsert_fail). -#}

{% macro upsert_stage_changes(sql, relation=none) %}
    {#- The model's changed rows, computed once and cached for this run: validation, statistics and
        the write all read them, and the model's SELECT (which may read {{ this }}) is evaluated
        before anything changes. `cache table ... as` creates the temp view and caches it in one
        statement. It cannot replace a view, so the name is this invocation's own: a run that
        failed before dropping its view leaves it in a long-lived session (the embedded `local`
        target) without blocking the next run. Temp views have no schema, and models of one name in
        two schemas can run side by side in one session (dbt threads on the embedded target), so
        the suffix is of this invocation and this relation (`relation`, default this: the
        companion of tombstones.sql stages its own changes while the model's are cached). -#}
    {% set relation = relation if relation is not none else this %}
    {% set changes = relation.identifier ~ '__joinery_changes_' ~ local_md5(invocation_id ~ relation.render())[:8] %}
    {% do run_query('cache table ' ~ changes ~ ' as\n' ~ sql) %}
    {{ return(changes) }}
{% endmacro %}


{% macro upsert_drop_changes(changes) %}
    {#- Drop the run's cached changes (`drop view` uncaches a temp view as it drops it): at the end of
        a run, and in upsert_fail before each error once they are cached. -#}
    {% do run_query('drop view if exists ' ~ changes) %}
{% endmacro %}


{% macro upsert_validate_changes(changes, settings, with_partitions=false, newest_of=none) %}
    {#- Check the changed rows' columns against the config; returns their columns (minus the delete
        marker, partition columns last), the key, partition and delete-marker columns as spelled in
        the SELECT, and their statistics (rows, live rows; duplicate keys fail). With
        `with_partitions` (an incremental rewrite of a partitioned table), also the partitions they
        fall in (`partition_values`); with `newest_of` (upsert_watermark_to_derive), the newest
        value of its column, at least its floor, as a string (`newest`); all from one pass. -#}
    {% set columns = joinery.describe_relation(changes)['columns'] %}
    {% set found = joinery.upsert_change_columns(changes, settings, columns) %}
    {% set stored = columns | rejectattr('name', 'equalto', found.deleted) | list %}
    {#- Partition columns last: Spark stores them after the data columns. -#}
    {% set ordered = stored | rejectattr('name', 'in', found.partition_by) | list %}
    {% for name in found.partition_by %}
        {% do ordered.append(stored | selectattr('name', 'equalto', name) | first) %}
    {% endfor %}
    {% set live = 'not coalesce(' ~ joinery.quote_identifier(found.deleted) ~ ', false)' if found.deleted else 'true' %}
    {% set stats = joinery.upsert_change_statistics(changes, columns, found['keys'], live,
        found.partition_by if with_partitions else [], newest_of) %}
    {% if stats.duplicates > 1 %}
        {{ joinery.upsert_fail('the changed rows hold ' ~ stats.duplicates ~ ' rows for the key '
            ~ stats.duplicate_key ~ ' (unique_key ' ~ tojson(found['keys']) ~ '); an upsert batch needs one row '
            ~ 'per key: deduplicate it in the model (e.g. joinery.dedup_latest)', changes) }}
    {% endif %}
    {{ return({'columns': ordered, 'keys': found['keys'], 'partition_by': found.partition_by,
        'deleted': found.deleted, 'live': live, 'rows': stats.rows, 'live_rows': stats.live_rows,
        'partition_values': joinery.upsert_partition_values(stats.partitions, changes)
            if with_partitions and found.partition_by else none,
        'newest': stats.newest}) }}
{% endmacro %}


{% macro upsert_change_columns(changes, settings, columns) %}
    {#- The key, partition and delete-marker columns of the config, as the SELECT spells them
        ({'keys', 'partition_by', 'deleted'}); a missing or unusable one fails the run. -#}
    {% set names = columns | map(attribute='name') | list %}
    {% set found = {'keys': [], 'partition_by': [], 'deleted': joinery.find_column(names, settings.deleted_column)} %}
    {% for argument, wanted in [('unique_key', settings.unique_key), ('partition_by', settings.partition_by)] %}
        {% for column in wanted %}
            {% set name = joinery.find_column(names, column) %}
            {% if name is none %}
                {{ joinery.upsert_argument_error(argument, column,
                    "no such column in the model's SELECT; its columns are " ~ tojson(names), changes) }}
            {% endif %}
            {% do found['keys' if argument == 'unique_key' else 'partition_by'].append(name) %}
        {% endfor %}
    {% endfor %}
    {% for key in found['keys'] %}
        {% set key_type = (columns | selectattr('name', 'equalto', key) | first)['type'] %}
        {% if not joinery.is_comparable_type(key_type) %}
            {{ joinery.upsert_argument_error('unique_key', key, 'the column is of type ' ~ key_type
                ~ ', which Spark cannot compare (a map or a variant): a key must be comparable; key on '
                ~ 'columns that identify the row, or on a string form such as to_json(...) in the SELECT', changes) }}
        {% endif %}
    {% endfor %}
    {% if found.deleted is not none %}
        {% set deleted_type = (columns | selectattr('name', 'equalto', found.deleted) | first)['type'] %}
        {% if deleted_type | lower != 'boolean' %}
            {{ joinery.upsert_argument_error('deleted_column', found.deleted,
                'the delete marker must be a boolean column, but it is ' ~ deleted_type, changes) }}
        {% endif %}
    {% endif %}
    {{ return(found) }}
{% endmacro %}


{% macro upsert_change_statistics(changes, columns, keys, live, partitions, newest_of) %}
    {#- One pass over the changes, grouped by key: rows, live rows, the largest number of rows of one
        key and that key (as JSON), the partitions they fall in (a set per key, then the set of
        those), and the newest value of `newest_of.column` (none when the SELECT lacks it). Every
        changed row was read by this run, so that value never passes a row the run did not read. -#}
    {% set key_struct = [] %}
    {% for key in keys %}
        {% do key_struct.append(joinery.sql_string(key) ~ ', ' ~ joinery.quote_identifier(key)) %}
    {% endfor %}
    {% set casts = joinery.partition_casts(partitions) %}
    {% set names = columns | map(attribute='name') | list %}
    {% set newest = joinery.find_column(names, newest_of.column) if newest_of is not none else none %}
    {% set newest_sql = 'null' %}
    {% if newest is not none %}
        {% set newest_type = (columns | selectattr('name', 'equalto', newest) | first)['type'] %}
        {% set newest_sql = joinery.watermark_text_sql('greatest(' ~ joinery.typed_literal(newest_of.floor, newest_type)
            ~ ', max(newest))' if newest_of.floor is not none else 'max(newest)', newest_type) %}
    {% endif %}
    {% set row = run_query(
        'select count(*), coalesce(sum(n), 0), coalesce(sum(live), 0), coalesce(max(n), 0), max_by(key_json, n), '
            ~ ('to_json(array_sort(array_distinct(flatten(collect_set(partitions)))))' if casts else 'null') ~ ', '
            ~ newest_sql ~ '\n'
        ~ 'from (select count(*) as n, count_if(' ~ live ~ ') as live, to_json(named_struct('
            ~ key_struct | join(', ') ~ ')) as key_json'
            ~ (', collect_set(array(' ~ casts | join(', ') ~ ')) as partitions' if casts else '')
            ~ (', max(' ~ joinery.quote_identifier(newest) ~ ') as newest' if newest is not none else '') ~ '\n'
        ~ '      from ' ~ changes ~ ' group by ' ~ joinery.quoted_column_list(keys) ~ ')').rows[0] %}
    {{ return({'rows': row[1] | int, 'live_rows': row[2] | int, 'duplicates': row[3], 'duplicate_key': row[4],
        'partitions': row[5], 'newest': row[6]}) }}
{% endmacro %}


{% macro upsert_partition_values(text, changes) %}
    {#- Partition value lists as partition_list_sql writes them; a NULL value fails the run: partition
        columns of a joinery_upsert model must not be NULL. -#}
    {% set partitions = joinery.parse_partition_values(text) %}
    {% for values in partitions if none in values %}
        {{ joinery.upsert_fail('a partition column is NULL for some rows (an empty string is one too: Spark '
            ~ 'stores it as the NULL partition); partition columns of a joinery_upsert model must not be NULL',
            changes) }}
    {% endfor %}
    {{ return(partitions) }}
{% endmacro %}


{% macro upsert_live_condition(change_info, alias) %}
    {#- True for changed rows that upsert (not deletes); a NULL marker counts as not deleted. -#}
    {% if change_info.deleted is none %}
        {{ return('true') }}
    {% endif %}
    {{ return('not coalesce(' ~ alias ~ '.' ~ joinery.quote_identifier(change_info.deleted) ~ ', false)') }}
{% endmacro %}


{% macro upsert_types_compatible(target_type, change_type) %}
    {#- A changed column may have the target's type, be untyped NULL, or a type whose every value the
        target's type holds exactly: a narrower integer, or an int or float into a double. -#}
    {% set integers = ['tinyint', 'smallint', 'int', 'bigint'] %}
    {% set t = target_type | lower %}
    {% set c = change_type | lower %}
    {% if t == c or c == 'void' %}
        {{ return(true) }}
    {% endif %}
    {% if c in integers and t in integers %}
        {{ return(integers.index(c) <= integers.index(t)) }}
    {% endif %}
    {#- Values a double holds exactly: not a bigint's above 2^53, and a float is not a bigint. -#}
    {{ return(t == 'double' and c in ['tinyint', 'smallint', 'int', 'float']) }}
{% endmacro %}


{% macro upsert_check_schema_unchanged(settings, changes, target_sql, target_names, change_names) %}
    {#- on_schema_change='fail': an incremental run whose SELECT adds or drops columns of the table
        stops before it writes anything. Names compare ignoring case, as Spark resolves them. -#}
    {% if settings.on_schema_change != 'fail' %}
        {{ return(none) }}
    {% endif %}
    {% set added = [] %}
    {% for name in change_names if joinery.find_column(target_names, name) is none %}
        {% do added.append(name) %}
    {% endfor %}
    {% set removed = [] %}
    {% for name in target_names if joinery.find_column(change_names, name) is none %}
        {% do removed.append(name) %}
    {% endfor %}
    {% if added or removed %}
        {{ joinery.upsert_argument_error('on_schema_change', 'fail', 'the model adds columns '
            ~ tojson(added) ~ ' and no longer selects ' ~ tojson(removed) ~ ' of ' ~ target_sql
            ~ '; run it with --full-refresh, or set on_schema_change to append_new_columns', changes) }}
    {% endif %}
{% endmacro %}
