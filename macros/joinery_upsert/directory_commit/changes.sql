{#- The changed rows of a run on a parquet, orc or Hive SerDe table: staged once as a cached view,
    validated against the config, counted, and dropped at the end of the run or before any error
    (_upsert_fail). The cache lets the stage table's several INSERTs and the checks read rows
    computed once, before anything changes. -#}

{% macro _upsert_stage_changes(sql, relation=none) %}
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


{% macro _upsert_validate_changes(changes, settings, with_partitions=false) %}
    {#- Check the changed rows' columns against the config; returns their columns (minus the delete
        marker, partition columns last), the key, partition and delete-marker columns as spelled in
        the SELECT, and their statistics (rows, live rows; duplicate keys fail). With
        `with_partitions` (an incremental rewrite of a partitioned table), also the partitions they
        fall in (`partition_values`); all from one pass. -#}
    {% set columns = joinery._describe_relation(changes)['columns'] %}
    {% set found = joinery._upsert_change_columns(changes, settings, columns) %}
    {% set stored = columns | rejectattr('name', 'equalto', found.deleted) | list %}
    {#- Partition columns last: Spark stores them after the data columns. -#}
    {% set ordered = stored | rejectattr('name', 'in', found.partition_by) | list %}
    {% for name in found.partition_by %}
        {% do ordered.append(stored | selectattr('name', 'equalto', name) | first) %}
    {% endfor %}
    {% set live = 'not coalesce(' ~ joinery._quote_identifier(found.deleted) ~ ', false)'
        if found.deleted else 'true' %}
    {% set stats = joinery._upsert_change_statistics(changes, found['keys'], live,
        found.partition_by if with_partitions else []) %}
    {% if stats.duplicates > 1 %}
        {{ joinery._upsert_fail('the changed rows hold ' ~ stats.duplicates ~ ' rows for the key '
            ~ stats.duplicate_key ~ ' (unique_key ' ~ tojson(found['keys']) ~ '); an upsert batch needs one row '
            ~ 'per key: deduplicate it in the model (e.g. joinery.dedup_latest)', changes) }}
    {% endif %}
    {{ return({'columns': ordered, 'keys': found['keys'], 'partition_by': found.partition_by,
        'deleted': found.deleted, 'live': live, 'rows': stats.rows, 'live_rows': stats.live_rows,
        'partition_values': joinery._upsert_partition_values(stats.partitions, changes)
            if with_partitions and found.partition_by else none}) }}
{% endmacro %}


{% macro _upsert_change_statistics(changes, keys, live, partitions) %}
    {#- One pass over the changes, grouped by key: rows, live rows, the largest number of rows of one
        key and that key (as JSON), and the partitions they fall in (a set per key, then the set of
        those). -#}
    {% set key_struct = [] %}
    {% for key in keys %}
        {% do key_struct.append(joinery._sql_string(key) ~ ', ' ~ joinery._quote_identifier(key)) %}
    {% endfor %}
    {% set casts = joinery._partition_casts(partitions) %}
    {% set row = run_query(
        'select count(*), coalesce(sum(n), 0), coalesce(sum(live), 0), coalesce(max(n), 0), max_by(key_json, n), '
            ~ ('to_json(array_sort(array_distinct(flatten(collect_set(partitions)))))' if casts else 'null') ~ '\n'
        ~ 'from (select count(*) as n, count_if(' ~ live ~ ') as live, to_json(named_struct('
            ~ key_struct | join(', ') ~ ')) as key_json'
            ~ (', collect_set(array(' ~ casts | join(', ') ~ ')) as partitions' if casts else '') ~ '\n'
        ~ '      from ' ~ changes ~ ' group by ' ~ joinery._quoted_column_list(keys) ~ ')').rows[0] %}
    {{ return({'rows': row[1] | int, 'live_rows': row[2] | int, 'duplicates': row[3], 'duplicate_key': row[4],
        'partitions': row[5]}) }}
{% endmacro %}


{% macro _upsert_only_tombstones_change(target, changes, change_info, settings) %}
    {#- Whether the changes of an incremental rewrite are all deletes of keys the table does not hold
        (compact's records of a delete of a deleted or unseen key, its purges of expired tombstones):
        they change only the tombstones (tombstones.sql), so the table is not rewritten. One scan of
        the table's key columns. -#}
    {% if not settings.tombstones or change_info.rows == 0 or change_info.live_rows > 0 %}
        {{ return(false) }}
    {% endif %}
    {% set held = run_query('select count(*) from ' ~ changes ~ ' as changed left semi join ' ~ target.render()
        ~ ' as current on ' ~ joinery._key_match(change_info['keys'], 'changed', 'current')).rows[0][0] %}
    {{ return(held == 0) }}
{% endmacro %}
