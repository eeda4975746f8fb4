{#- joinery_upsert on delta and iceberg tables: the table format's own log is the commit, so none of
    the parquet path's bookkeeping (version directories, journal, janitor, written-row check). A full
    build is one `create or replace` (replace.sql); an incremental run is one MERGE. Before either,
    one preflight statement checks the SELECT against the table (docs/upsert.md, "delta and
    iceberg": the statements a run sends). -#}

{% macro _upsert_merge_prepare(target, sql, settings, mode, state) %}
    {#- Everything before the commit statement: the preflight (pipeline/preflight.sql) and its checks,
        and for an incremental run the MERGE's plan. {'mode', 'preflight', 'found' (key, partition
        and marker columns as the SELECT spells them), 'plan', 'stats', 'skip': no changed rows,
        'change_info' and 'changes' (what tombstones.sql reads)}. Statistics are computed before the
        MERGE only where it needs them: on iceberg, whose MERGE commits a snapshot even with nothing
        to change and reports no figures, and for a partitioned table whose partition columns are
        all key columns (their values make the ON clause's partition predicate, so the MERGE reads
        only those partitions' files). On delta otherwise, a MERGE with nothing to change commits
        nothing, and the key check is made in the MERGE itself (pipeline/checked_rows.sql). -#}
    {% if not mode.full and state is none %}
        {#- The tombstones' companion (tombstones.sql) comes without the state its table's run read. -#}
        {% set state = joinery._upsert_table_state(target, settings) %}
        {% do joinery._upsert_check_built(target, state.built, settings) %}
    {% endif %}
    {% set prune = not mode.full and settings.partition_by | length > 0 and settings.partition_by | map('lower')
        | reject('in', settings.unique_key | map('lower') | list) | list | length == 0 %}
    {% set with_stats = not mode.full and (settings.file_format == 'iceberg' or prune) %}
    {% set sql = joinery._upsert_merge_source(target, sql, settings) if not mode.full else sql %}
    {% set preflight = joinery._upsert_preflight(sql, none if mode.full else target.render(), settings,
        with_stats=with_stats) %}
    {% set found = joinery._upsert_change_columns(none, settings, preflight.columns) %}
    {% set prepared = {'mode': mode, 'preflight': preflight, 'found': found, 'prune': prune, 'sql': sql,
        'stats': preflight.stats, 'skip': with_stats and preflight.stats.rows == 0, 'changes': '(\n' ~ sql ~ '\n)',
        'change_info': {'columns': preflight.columns, 'keys': found['keys'], 'deleted': found.deleted}} %}
    {% if with_stats %}
        {% do joinery._upsert_check_stats(preflight.stats, found, settings) %}
    {% endif %}
    {% if not mode.full %}
        {% do prepared.update({'plan': joinery._upsert_merge_plan(target, preflight, found, settings)}) %}
    {% endif %}
    {{ return(prepared) }}
{% endmacro %}


{% macro _upsert_merge_commit(target, existing, sql, settings, prepared) %}
    {#- The one commit: `create or replace` on a full build (replace.sql), else one MERGE; none when
        there is nothing to change. -#}
    {% if prepared.mode.full %}
        {% do joinery._upsert_merge_replace(target, existing, sql, settings, prepared) %}
    {% elif prepared.skip %}
        {% call statement('main') %}select 'joinery_upsert: no changed rows' as status{% endcall %}
        {{ log('joinery_upsert ' ~ target ~ ': no changed rows, table left unchanged', info=true) }}
    {% else %}
        {% do joinery._upsert_merge_changes(target, prepared.sql, settings, prepared) %}
    {% endif %}
{% endmacro %}


{% macro _upsert_merge_source(target, sql, settings) %}
    {#- The changed rows as the MERGE reads them. On delta, a temporary view of the SELECT (one
        statement, nothing computed), and `select * from` it: a MERGE whose source reads the target
        table in a subquery (a watermark, `{{ this }}`) fails on Delta 4.4 with "Table does not
        support reads" when the source also reads a non-Delta table, and a view's plan, analyzed when
        the view is created, does not. The view is named by the relation, so the next run replaces
        it; it holds no data. Iceberg reads the SELECT as it is. -#}
    {% if settings.file_format != 'delta' %}
        {{ return(sql) }}
    {% endif %}
    {% set view = target.identifier ~ '__joinery_changes_' ~ local_md5(target.render())[:8] %}
    {% do run_query('create or replace temporary view ' ~ view ~ ' as\n' ~ sql) %}
    {{ return('select * from ' ~ view) }}
{% endmacro %}


{% macro _upsert_merge_changes(target, sql, settings, prepared) %}
    {#- One MERGE of the changed rows, with the key and partition checks in its source. -#}
    {% set plan = prepared.plan %}
    {% set target_filter = joinery._partition_predicate(plan.partition_columns,
        joinery._upsert_partition_values(prepared.stats.partitions), alias='target') if prepared.prune else none %}
    {% set evolve = plan.added | length > 0 %}
    {% if evolve and settings.file_format == 'iceberg' %}
        {% do joinery._upsert_add_columns(target, prepared.preflight.columns, plan.added) %}
        {% set evolve = false %}
    {% endif %}
    {#- The run's note, which carries the last full build's time forward: always on iceberg (its
        notes are set anyway), on delta only once that build is half the history read back, since
        there the note costs a SET and a RESET (merge_commit/table_state.sql). -#}
    {% set costs = prepared.mode.get('costs') or {} %}
    {% set noted = settings.file_format == 'iceberg' or costs.get('full_age', 0) >= 10
        or joinery._upsert_read_versions() is not none %}
    {% set note = joinery._upsert_build_note(prepared.preflight.started, settings, 'incremental', target,
        full_seconds=costs.get('full_seconds')) %}
    {% if noted %}
        {% do joinery._upsert_note_commit(settings, note, merge=true) %}
    {% endif %}
    {% call statement('main', fetch_result=true) %}
        {{ joinery.upsert_merge_sql(target.render(),
            '(\n' ~ joinery._upsert_checked_rows_sql(sql, prepared.found, settings) ~ '\n)',
            prepared.found['keys'], plan.names, prepared.found.deleted, target_filter=target_filter,
            column_types=plan.types if settings.skip_unchanged else none, null_columns=plan.null_columns,
            schema_evolution=evolve) }}
    {% endcall %}
    {% if noted %}
        {% do joinery._upsert_note_commit(settings, none, merge=true) %}
    {% endif %}
    {% do joinery._upsert_merge_report(target, load_result('main'), prepared.stats) %}
{% endmacro %}


{% macro _upsert_add_columns(target, columns, added) %}
    {#- Iceberg: the model's new columns, added before the MERGE (a schema change, no snapshot). Its
        MERGE cannot add them itself when the SELECT reads the table: Spark finds the table's columns
        changed under the analyzed source (INCOMPATIBLE_TABLE_CHANGE_AFTER_ANALYSIS). -#}
    {% set definitions = [] %}
    {% for column in columns if column.name in added %}
        {% do definitions.append(joinery._quote_identifier(column.name) ~ ' ' ~ column.type) %}
    {% endfor %}
    {% do run_query('alter table ' ~ target.render() ~ ' add columns (' ~ definitions | join(', ') ~ ')') %}
{% endmacro %}


{% macro _upsert_check_stats(stats, found, settings) %}
    {#- The preflight's figures, where it computed them: one row per key, no NULL partition value, and
        a delete marker spelled as configured (the figures read it by that name). -#}
    {% if found.deleted is not none and found.deleted != settings.deleted_column %}
        {{ joinery._upsert_argument_error('deleted_column', settings.deleted_column, "the model's SELECT spells it "
            ~ found.deleted ~ ': spell the column as deleted_column does') }}
    {% endif %}
    {% if stats.duplicates > 1 %}
        {{ joinery._upsert_fail('the changed rows hold ' ~ stats.duplicates ~ ' rows for the key '
            ~ stats.duplicate_key ~ ' (unique_key ' ~ tojson(found['keys']) ~ '); an upsert batch needs one row '
            ~ 'per key: deduplicate it in the model (e.g. joinery.dedup_latest)') }}
    {% endif %}
    {% do joinery._upsert_partition_values(stats.partitions) %}
{% endmacro %}


{% macro _upsert_check_built(target, built, settings) %}
    {#- An incremental run matches rows on the unique_key the table was built with (on another key,
        one change could update several rows) and keeps its partitioning: both change only with
        --full-refresh. `built`: the last full build's note (table_state.sql), whose digests are
        compared; the error reads the readable forms from the table's properties. -#}
    {% set wanted = joinery._upsert_parse_build_note(joinery._upsert_build_note('', settings, 'full')) %}
    {% for name in ['unique_key', 'partition_by'] if (built or {}).get(name) != wanted[name] %}
        {% set stored = joinery._table_properties(target.render()).get('joinery.' ~ name) %}
        {% if name == 'unique_key' %}
            {{ joinery._upsert_argument_error('unique_key', settings.unique_key, 'the table was built with unique_key '
                ~ (stored or '(none: not built by joinery_upsert)') ~ ', and matching its rows on another key can '
                ~ 'merge or drop rows: change unique_key with --full-refresh') }}
        {% else %}
            {{ joinery._upsert_argument_error('partition_by', settings.partition_by, 'the table is partitioned by '
                ~ (stored or '(unknown)') ~ '; change partitioning with --full-refresh') }}
        {% endif %}
    {% endfor %}
{% endmacro %}


{% macro _upsert_merge_plan(target, preflight, found, settings) %}
    {#- The MERGE's columns against the table's: {'names' (stored columns of the SELECT), 'types'
        ({name: the table's type} of those the table has), 'added' (the others: added by the MERGE's
        schema evolution),
        'null_columns' (columns the SELECT no longer has: NULL in the rows it updates),
        'partition_columns' ([{name, type}] as the table has them)}. A type the table cannot hold,
        or a changed set of columns under on_schema_change='fail', fails the run. -#}
    {% set names = joinery._upsert_stored_names(preflight.columns, found) %}
    {% set table_names = preflight.target_columns | map(attribute='name') | list %}
    {% do joinery._upsert_check_schema_unchanged(settings, none, target.render(), table_names, names) %}
    {% set plan = {'names': names, 'types': {}, 'added': [], 'null_columns': [], 'partition_columns': []} %}
    {% for column in preflight.columns if column.name in names %}
        {% set stored = joinery._find_column(table_names, column.name) %}
        {% set table_type = (preflight.target_columns | selectattr('name', 'equalto', stored) | first)['type']
            if stored is not none else none %}
        {% if stored is none %}
            {% do plan.added.append(column.name) %}
        {% elif not joinery._upsert_types_compatible(table_type, column.type) %}
            {{ joinery._upsert_fail('column ' ~ column.name ~ ' is ' ~ column.type ~ ' in the model but ' ~ table_type
                ~ ' in ' ~ target ~ '; cast it in the model, or change the type with --full-refresh') }}
        {% else %}
            {% do plan.types.update({column.name: table_type}) %}
        {% endif %}
    {% endfor %}
    {% for column in preflight.target_columns %}
        {% if joinery._find_column(names, column.name) is none %}
            {% do plan.null_columns.append(column.name) %}
        {% endif %}
        {% if joinery._find_column(settings.partition_by, column.name) is not none %}
            {% do plan.partition_columns.append(column) %}
        {% endif %}
    {% endfor %}
    {{ return(plan) }}
{% endmacro %}


{% macro _upsert_merge_report(target, result, stats) %}
    {#- The run's figures in its adapter response and log line: from the MERGE's own result row on
        delta (num_affected_rows, num_updated_rows, num_deleted_rows, num_inserted_rows), from the
        preflight's on iceberg, whose MERGE returns none. -#}
    {% set row = result.table.rows[0] if result.table is not none and result.table.rows | length > 0 else none %}
    {% if row is not none and row | length >= 4 %}
        {% set summary = row[3] ~ ' inserted, ' ~ row[1] ~ ' updated, ' ~ row[2] ~ ' deleted' %}
        {% set affected = row[0] | int %}
    {% elif stats is not none %}
        {% set summary = stats.rows ~ ' changed rows (' ~ (stats.rows - stats.live_rows) ~ ' deletes)' %}
        {% set affected = stats.rows %}
    {% else %}
        {{ log('joinery_upsert ' ~ target ~ ': merged', info=true) }}
        {{ return(none) }}
    {% endif %}
    {% do store_raw_result('main', message='MERGE ' ~ summary, code='MERGE', rows_affected=affected,
        agate_table=result.table) %}
    {{ log('joinery_upsert ' ~ target ~ ': ' ~ summary ~ ' (MERGE)', info=true) }}
{% endmacro %}
