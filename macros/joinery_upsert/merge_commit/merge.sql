{#- joinery_upsert on delta and iceberg tables: the table format's own log is the commit, so none of
    the parquet path's bookkeeping (version directories, journal, janitor, written-row check). First
    run and --full-refresh: one `create or replace table ... as select`; incremental: ADD COLUMNS for
    new columns, then one MERGE (docs/upsert.md). -#}

{% macro upsert_by_merge(target, existing, sql, settings) %}
    {% set target_sql = target.render() %}
    {#- `create or replace` keeps the provider: a table of another format is rebuilt (is_incremental
        is false for it, so the SELECT yields every row). -#}
    {% set same_format = existing is not none
        and joinery.relation_provider(existing) == settings.file_format %}
    {#- settings.full_build: the companion of tombstones.sql is rebuilt whenever its table is. -#}
    {% set full_build = not same_format or should_full_refresh() or settings.get('full_build', false) %}
    {% set properties = joinery.table_properties(target_sql) if same_format else {} %}
    {% set target_info = joinery.describe_relation(target_sql) if not full_build else none %}
    {% if not full_build %}
        {% do joinery.upsert_merge_check_table(target_sql, target_info, properties, settings) %}
    {% endif %}

    {% set changes = joinery.upsert_stage_changes(sql, target) %}
    {% set recorded = joinery.recorded_watermark() %}
    {% set newest_of = joinery.upsert_watermark_to_derive(recorded) %}
    {% set pruned = not full_build and joinery.upsert_merge_prunes_partitions(target_info, settings) %}
    {% set change_info = joinery.upsert_validate_changes(changes, settings, with_partitions=pruned,
        newest_of=newest_of) %}
    {% set watermark_text = recorded if newest_of is none
        else joinery.upsert_derived_watermark(newest_of, change_info.newest) %}

    {% if full_build or change_info.rows > 0 %}
        {#- Before the table's commit: a tombstone whose commit fails is applied again by the next run. -#}
        {% do joinery.upsert_write_tombstones(target, changes, change_info, settings, full_build) %}
    {% endif %}
    {% if full_build %}
        {% do joinery.upsert_merge_replace(target, existing if not same_format else none, changes, change_info,
            settings, watermark_text) %}
    {% elif change_info.rows == 0 %}
        {#- Nothing changed: no MERGE, no new table version (only a watermark that moved is stored). -#}
        {% do joinery.upsert_store_unchanged_watermark(target_sql, properties, watermark_text) %}
        {% call statement('main') %}select 'joinery_upsert: no changed rows' as status{% endcall %}
        {{ log('joinery_upsert ' ~ target ~ ': no changed rows, table left unchanged', info=true) }}
    {% else %}
        {% do joinery.upsert_merge_apply(target_sql, target_info, changes, change_info, settings, pruned) %}
        {#- After the MERGE, not with it: a kill in between leaves the old watermark, and the next
            run applies the same rows again, which changes nothing. -#}
        {% do joinery.upsert_store_unchanged_watermark(target_sql, properties, watermark_text) %}
    {% endif %}
    {% do joinery.upsert_drop_changes(changes) %}
{% endmacro %}


{% macro upsert_format_properties(file_format) %}
    {#- The table properties joinery sets on the delta and iceberg tables it creates: deletion
        vectors on delta; format version 2 with merge-on-read on iceberg, so that a MERGE writes
        delete files instead of rewriting the data files it touches. -#}
    {% if file_format == 'delta' %}
        {{ return({'delta.enableDeletionVectors': 'true'}) }}
    {% elif file_format == 'iceberg' %}
        {{ return({'format-version': '2', 'write.delete.mode': 'merge-on-read',
            'write.update.mode': 'merge-on-read', 'write.merge.mode': 'merge-on-read'}) }}
    {% endif %}
    {{ return({}) }}
{% endmacro %}


{% macro upsert_merge_replace(target, other_format, changes, change_info, settings, watermark_text) %}
    {#- The whole table from the live changed rows, in one atomic `create or replace` (its previous
        version stays readable by time travel). `create or replace` cannot change a table's provider,
        so a table of another format (`other_format`) is dropped first: not atomic, that one case. -#}
    {% set assignments = [] %}
    {% for name, value in joinery.upsert_format_properties(settings.file_format) | dictsort %}
        {% do assignments.append(joinery.sql_string(name) ~ ' = ' ~ joinery.sql_string(value)) %}
    {% endfor %}
    {% set joinery_values = {'unique_key': tojson(settings.unique_key | map('lower') | list)} %}
    {% if watermark_text is not none %}
        {% do joinery_values.update({'watermark': watermark_text}) %}
    {% endif %}
    {% do assignments.append(joinery.upsert_properties_sql(joinery_values)) %}
    {% set location = config.get('location_root') %}
    {% if other_format is not none %}
        {% do adapter.drop_relation(other_format) %}
    {% endif %}
    {% call statement('main') %}
        create or replace table {{ target.render() }}
        {{ joinery.upsert_storage_clause(settings) }}
        {%- if location %}
        location {{ joinery.sql_string(location ~ '/' ~ target.identifier) }}
        {%- endif %}
        tblproperties ({{ assignments | join(', ') }})
        as select {{ joinery.quoted_column_list(change_info.columns | map(attribute='name') | list) }}
        from {{ changes }} as changed
        where {{ joinery.upsert_live_condition(change_info, 'changed') }}
    {% endcall %}
    {{ log('joinery_upsert ' ~ target ~ ': full build of ' ~ change_info.live_rows ~ ' rows ('
        ~ settings.file_format ~ ', create or replace)', info=true) }}
{% endmacro %}


{% macro upsert_merge_check_table(target_sql, target_info, properties, settings) %}
    {#- Before an incremental MERGE: the table was built with this unique_key (matched on another
        key, one change could update several rows) and this partitioning. -#}
    {% set unique_key_text = tojson(settings.unique_key | map('lower') | list) %}
    {% set stored = properties.get('joinery.unique_key') %}
    {% if stored != unique_key_text %}
        {{ joinery.upsert_argument_error('unique_key', settings.unique_key, 'the table was built '
            ~ 'with unique_key ' ~ (stored or '(none: not built by joinery_upsert)') ~ ', and matching its rows '
            ~ 'on another key can merge or drop rows: change unique_key with --full-refresh') }}
    {% endif %}
    {% if target_info.partition_columns | map('lower') | list != settings.partition_by | map('lower') | list %}
        {{ joinery.upsert_argument_error('partition_by', settings.partition_by,
            'the table is partitioned by ' ~ tojson(target_info.partition_columns)
            ~ '; change partitioning with --full-refresh') }}
    {% endif %}
{% endmacro %}


{% macro upsert_merge_prunes_partitions(target_info, settings) %}
    {#- Whether the MERGE can name the changes' partitions in its ON clause: only when every
        partition column is part of the key (otherwise a key could move to another partition, and
        its old row would not be matched). -#}
    {% set keys = settings.unique_key | map('lower') | list %}
    {{ return(target_info.partition_columns | length > 0
        and target_info.partition_columns | map('lower') | reject('in', keys) | list | length == 0) }}
{% endmacro %}


{% macro upsert_merge_apply(target_sql, target_info, changes, change_info, settings, pruned) %}
    {#- Column checks (types as on parquet, on_schema_change), new columns added, then the MERGE;
        the run's statistics come from the MERGE's own result row (delta). -#}
    {% set target_names = target_info.columns | map(attribute='name') | list %}
    {% set names = change_info.columns | map(attribute='name') | list %}
    {% do joinery.upsert_check_schema_unchanged(settings, changes, target_sql, target_names, names) %}
    {% set added = [] %}
    {% for column in change_info.columns %}
        {% set found = joinery.find_column(target_names, column.name) %}
        {% set target_type = (target_info.columns | selectattr('name', 'equalto', found) | first)['type']
            if found is not none else none %}
        {% if found is none %}
            {% do added.append(joinery.quote_identifier(column.name) ~ ' ' ~ column.type) %}
        {% elif not joinery.upsert_types_compatible(target_type, column.type) %}
            {{ joinery.upsert_fail('column ' ~ column.name ~ ' is ' ~ column.type ~ ' in the model but '
                ~ target_type ~ ' in ' ~ target_sql ~ '; cast it in the model, or change the type with --full-refresh',
                changes) }}
        {% endif %}
    {% endfor %}
    {% if added %}
        {% do run_query('alter table ' ~ target_sql ~ ' add columns (' ~ added | join(', ') ~ ')') %}
    {% endif %}
    {#- Named and typed as the table has them (a delta table keeps them where they were selected). -#}
    {% set partition_columns = [] %}
    {% for name in target_info.partition_columns %}
        {% do partition_columns.append(target_info.columns | selectattr('name', 'equalto', name) | first) %}
    {% endfor %}
    {% set target_filter = joinery.partition_predicate(partition_columns, change_info.partition_values,
        alias='target') if pruned else none %}
    {% call statement('main', fetch_result=true) %}
        {{ joinery.upsert_merge_sql(target_sql, changes, change_info['keys'], names, change_info.deleted,
            target_filter=target_filter) }}
    {% endcall %}
    {% do joinery.upsert_merge_report(target_sql, load_result('main')) %}
{% endmacro %}


{% macro upsert_merge_report(target_sql, result) %}
    {#- The run's statistics from the MERGE's result row (delta: num_affected_rows, num_updated_rows,
        num_deleted_rows, num_inserted_rows), in the run's adapter response and log line. -#}
    {% set row = result.table.rows[0] if result.table is not none and result.table.rows | length > 0 else none %}
    {% if row is none or row | length < 4 %}
        {{ log('joinery_upsert ' ~ target_sql ~ ': merged', info=true) }}
        {{ return(none) }}
    {% endif %}
    {% set summary = row[3] ~ ' inserted, ' ~ row[1] ~ ' updated, ' ~ row[2] ~ ' deleted' %}
    {% do store_raw_result('main', message='MERGE ' ~ summary, code='MERGE', rows_affected=row[0] | int,
        agate_table=result.table) %}
    {{ log('joinery_upsert ' ~ target_sql ~ ': ' ~ summary ~ ' (MERGE)', info=true) }}
{% endmacro %}
