{#- The changed rows of a run on a parquet, orc or Hive SerDe table: staged once as a cached view,
    validated against the config, counted, and dropped at the end of the run or before any error
    (_upsert_fail). The cache lets the stage table's several INSERTs and the checks read rows
    computed once, before anything changes. -#}

{% macro _upsert_validate_changes(changes, settings, with_partitions=false, companion=none, full_build=false) %}
    {#- Check the changed rows' columns against the config (on a `full_build`, before the figures,
        in a statement of its own); returns their columns (minus the delete
        marker, partition columns last), the key, partition and delete-marker columns as spelled in
        the SELECT, and their figures (pipeline/preflight.sql: rows, live rows, the newest watermark;
        duplicate keys fail). With `with_partitions` (an incremental rewrite of a partitioned table),
        also the partitions they fall in (`partition_values`). One statement. -#}
    {% if full_build %}
        {#- A first build checks the config's columns before it computes figures that name them, so
            a missing one fails with joinery's error naming the argument rather than Spark's. -#}
        {% set named = joinery._upsert_preflight(changes, none, settings).columns %}
        {% do joinery._upsert_change_columns(changes, settings, named) %}
        {% do joinery._upsert_tombstone_columns({'columns': named}, settings, changes) %}
    {% endif %}
    {% set preflight = joinery._upsert_preflight(changes, none, settings, with_stats=true, companion=companion,
        names=named | map(attribute='name') | list if full_build else none) %}
    {% set columns = preflight.columns %}
    {#- The stage table's DDL needs struct field names quoted where Spark would, which typeof does not. -#}
    {% set fixed = joinery._parseable_struct_types(changes, columns | map(attribute='name') | list,
        columns | map(attribute='type') | list) %}
    {% for column in columns if column.name in fixed %}
        {% do column.update({'type': fixed[column.name]}) %}
    {% endfor %}
    {% set found = joinery._upsert_change_columns(changes, settings, columns) %}
    {% set stats = preflight.stats %}
    {% set stored = columns | rejectattr('name', 'equalto', found.deleted) | list %}
    {#- Partition columns last: Spark stores them after the data columns. -#}
    {% set ordered = stored | rejectattr('name', 'in', found.partition_by) | list %}
    {% for name in found.partition_by %}
        {% do ordered.append(stored | selectattr('name', 'equalto', name) | first) %}
    {% endfor %}
    {% set live = 'not coalesce(' ~ joinery._quote_identifier(found.deleted) ~ ', false)'
        if found.deleted else 'true' %}
    {% do joinery._upsert_check_one_row_per_key(stats, found['keys'], changes) %}
    {{ return({'columns': ordered, 'keys': found['keys'], 'partition_by': found.partition_by,
        'deleted': found.deleted, 'live': live, 'rows': stats.rows, 'live_rows': stats.live_rows, 'stats': stats,
        'started': preflight.started,
        'partition_values': joinery._upsert_partition_values(stats.partitions, changes)
            if with_partitions and found.partition_by else none}) }}
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
