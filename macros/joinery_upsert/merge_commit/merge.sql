{#- joinery_upsert on delta and iceberg tables: the table format's own log is the commit, so none of
    the parquet path's bookkeeping (version directories, journal, janitor, written-row check). A full
    build is one `create or replace` (replace.sql). An incremental run stages its changed rows once
    (pipeline/stage.sql), reads their figures and both schemas in one statement (pipeline/preflight.sql),
    and sends one MERGE from the staged rows whose ON clause carries the literal key ranges they fall
    in (docs/upsert.md, "delta and iceberg": the statements a run sends). -#}

{% macro _upsert_merge_prepare(target, existing, sql, settings, mode, state) %}
    {#- The strategy's `prepare` (commit_strategy.sql): everything before the commit statement, from
        the run's plan where it has the figures (_upsert_merge_planned), else read now. -#}
    {% set plan = (state or {}).get('plan') %}
    {% if plan is not none and not mode.full and plan.get('columns') and not plan.get('reads_target') %}
        {{ return(joinery._upsert_merge_planned(target, sql, settings, mode, plan)) }}
    {% endif %}
    {{ return(joinery._upsert_merge_unplanned(target, sql, settings, mode, state)) }}
{% endmacro %}


{% macro _upsert_merge_unplanned(target, sql, settings, mode, state) %}
    {#- Everything before the commit statement, its figures read by one preflight. {'mode',
        'preflight', 'found' (key, partition and marker columns as the SELECT spells them), 'stats'
        (an incremental run's figures), 'skip' (no changed rows), 'changes' (the staged rows, a view
        name; the SELECT on a full build), 'change_info' (what tombstones.sql reads), 'plan' (the
        MERGE's columns)}. -#}
    {% if mode.full %}
        {#- With tombstones, the table and its companion both read the rows: computed once, cached. -#}
        {% set staged = settings.tombstones is not none %}
        {% set changes = joinery._upsert_stage_changes(sql, target) if staged else '(\n' ~ sql ~ '\n)' %}
        {% set lead = joinery._upsert_lead_seconds(mode) %}
        {% set preflight = joinery._upsert_preflight(changes, none, settings) %}
        {% set found = joinery._upsert_change_columns(changes if staged else none, settings, preflight.columns) %}
        {{ return({'mode': mode, 'preflight': preflight, 'found': found, 'stats': none, 'skip': false, 'lead': lead,
            'changes': changes, 'staged': staged, 'change_info': joinery._upsert_change_info(preflight, found)}) }}
    {% endif %}
    {% set changes = joinery._upsert_stage_changes(sql, target) %}
    {% set lead = joinery._upsert_lead_seconds(mode) %}
    {% set preflight = joinery._upsert_preflight(changes, target.render(), settings, with_stats=true,
        companion=joinery._upsert_tombstones_companion(target, settings), with_ranges=true) %}
    {% set found = joinery._upsert_change_columns(changes, settings, preflight.columns) %}
    {% do joinery._upsert_check_stats(preflight.stats, found, settings, changes) %}
    {{ return({'mode': mode, 'preflight': preflight, 'found': found, 'stats': preflight.stats, 'lead': lead,
        'skip': preflight.stats.rows == 0, 'changes': changes, 'staged': true, 'source': changes,
        'versions': joinery._upsert_checked_versions(state.get('versions'), preflight.columns, changes),
        'change_info': joinery._upsert_change_info(preflight, found),
        'plan': joinery._upsert_merge_plan(target, preflight, found, settings, changes)}) }}
{% endmacro %}


{% macro _upsert_checked_versions(versions, columns, changes) %}
    {#- The version columns a wrapped plan's SQL assumed its MERGE compares (_upsert_embedded_plan), as
        the SELECT spells them; the SELECT must keep them. -#}
    {% set names = columns | map(attribute='name') | list %}
    {% set found = [] %}
    {% for column in versions or [] %}
        {% set name = joinery._find_column(names, column) %}
        {% if name is none %}
            {{ joinery._upsert_fail('the model selects from a compact() whose incremental rows are only the '
                ~ 'newest delta versions, which its MERGE compares with the table by ' ~ tojson(versions)
                ~ '; the model dropped column ' ~ column ~ ': select it too', changes) }}
        {% endif %}
        {% do found.append(name) %}
    {% endfor %}
    {{ return(found or none) }}
{% endmacro %}


{% macro _upsert_merge_planned(target, sql, settings, mode, plan) %}
    {#- _upsert_merge_unplanned for a run its capability planned (contract/plan.sql): the plan holds the
        columns of the SELECT and of the table and the figures of the new input, so nothing is sent
        to learn them. The MERGE reads the SELECT, staged first when the run also records tombstones
        (pipeline/stage.sql), with the key and partition checks in its source
        (pipeline/checked_rows.sql), and compares the plan's version columns. -#}
    {% set preflight = {'columns': plan.columns, 'target_columns': plan.target_columns, 'started': plan.started,
        'stats': none} %}
    {% set found = joinery._upsert_change_columns(none, settings, plan.columns) %}
    {% set stats = {'rows': plan.rows, 'live_rows': plan.rows - plan.deletes, 'duplicates': 0, 'duplicate_key': none,
        'partitions': plan.partitions, 'key_ranges': plan.key_ranges, 'watermark': plan.watermark,
        'tombstone_changes': plan.deletes, 'versioned': plan.versions is not none} %}
    {% do joinery._upsert_partition_values(stats.partitions) %}
    {#- The tombstones and the MERGE both read the changes when the run records deletes: computed once. -#}
    {% set staged = settings.tombstones is not none and plan.deletes > 0 %}
    {% set changes = joinery._upsert_stage_changes(sql, target) if staged else '(\n' ~ sql ~ '\n)' %}
    {{ return({'mode': mode, 'preflight': preflight, 'found': found, 'stats': stats, 'skip': plan.rows == 0,
        'lead': plan.lead, 'changes': changes, 'staged': staged, 'versions': plan.versions,
        'source': '(\n' ~ joinery._upsert_checked_rows_sql('select * from ' ~ changes if staged else sql, found,
            settings) ~ '\n)',
        'change_info': joinery._upsert_change_info(preflight, found),
        'plan': joinery._upsert_merge_plan(target, preflight, found, settings, none)}) }}
{% endmacro %}


{% macro _upsert_change_info(preflight, found) %}
    {#- What tombstones.sql reads of the changed rows: their columns, key and delete marker. -#}
    {{ return({'columns': preflight.columns, 'keys': found['keys'], 'deleted': found.deleted}) }}
{% endmacro %}


{% macro _upsert_merge_commit(target, existing, settings, prepared) %}
    {#- The one commit: `create or replace` on a full build (replace.sql), else one MERGE; none when
        there is nothing to change. The staged rows are dropped after it. -#}
    {% if prepared.mode.full %}
        {% do joinery._upsert_merge_replace(target, existing, settings, prepared) %}
    {% elif prepared.skip %}
        {% do joinery._upsert_report_unchanged(target, 'no changed rows') %}
    {% else %}
        {% do joinery._upsert_merge_changes(target, settings, prepared) %}
    {% endif %}
    {% if prepared.staged %}
        {% do joinery._upsert_drop_changes(prepared.changes) %}
    {% endif %}
{% endmacro %}


{% macro _upsert_merge_changes(target, settings, prepared) %}
    {#- One MERGE of the staged rows, the run's note set around it (_upsert_note_commit). Its ON
        clause carries the key ranges of the changes and, for a table partitioned by key columns only,
        their partitions: Delta and Iceberg then read only the files those can match. -#}
    {% set plan = prepared.plan %}
    {% set evolve = plan.added | length > 0 %}
    {% if evolve and settings.file_format == 'iceberg' %}
        {% do joinery._upsert_add_columns(target, prepared.preflight.columns, plan.added) %}
        {% set evolve = false %}
    {% endif %}
    {% set note = joinery._upsert_build_note(prepared.preflight.started, settings, 'incremental', target,
        carried=prepared.mode.get('costs'), lead=prepared.lead, watermark=prepared.stats.watermark,
        feeds=prepared.mode.get('feeds'), record=joinery._upsert_run_record(prepared.mode)) %}
    {% do joinery._upsert_note_commit(settings, note, merge=true) %}
    {% set merge_sql = joinery.upsert_merge_sql(target.render(), prepared.source, prepared.found['keys'], plan.names,
        prepared.found.deleted, target_filter=joinery._upsert_merge_target_filter(prepared, settings),
        column_types=plan.types if settings.skip_unchanged else none, null_columns=plan.null_columns,
        schema_evolution=evolve, versions=prepared.versions, partial_column=prepared.found.get('partial'),
        partial_columns=(prepared.mode.get('partial') or {}).get('columns')) %}
    {#- Its rows are the MERGE's figures; _upsert_merge_report stores them as the run's result. -#}
    {% set merged = run_query(merge_sql) %}
    {% do joinery._upsert_note_commit(settings, none, merge=true) %}
    {% do joinery._upsert_merge_report(target, merged, prepared.stats, settings, note) %}
{% endmacro %}


{% macro _upsert_merge_target_filter(prepared, settings) %}
    {#- The condition on the table's rows the MERGE's ON clause adds: the literal ranges of the first
        key column the changes fall in, and for a table partitioned by key columns only, their
        partitions (a partition column outside the key may change with a row, so it cannot prune). -#}
    {% set key = prepared.found['keys'][0] %}
    {% set stored = joinery._find_column(prepared.preflight.target_columns | map(attribute='name') | list, key) %}
    {% set key_type = (prepared.preflight.target_columns | selectattr('name', 'equalto', stored) | first)['type'] %}
    {% set terms = [joinery._key_range_predicate(stored, key_type, prepared.stats.key_ranges, 'target')] %}
    {% set prune = settings.partition_by | length > 0 and settings.partition_by | map('lower')
        | reject('in', settings.unique_key | map('lower') | list) | list | length == 0 %}
    {% if prune %}
        {% do terms.append(joinery._partition_predicate(prepared.plan.partition_columns,
            joinery._upsert_partition_values(prepared.stats.partitions), alias='target')) %}
    {% endif %}
    {{ return(terms | join(' and ')) }}
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


{% macro _upsert_check_stats(stats, found, settings, changes) %}
    {#- The preflight's figures, where it computed them: one row per key, no NULL partition value, and
        a delete marker spelled as configured (the figures read it by that name). -#}
    {% if found.deleted is not none and found.deleted != settings.deleted_column %}
        {{ joinery._upsert_argument_error('deleted_column', settings.deleted_column, "the model's SELECT spells it "
            ~ found.deleted ~ ': spell the column as deleted_column does', changes) }}
    {% endif %}
    {% do joinery._upsert_check_one_row_per_key(stats, found['keys'], changes) %}
    {% do joinery._upsert_partition_values(stats.partitions, changes) %}
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


{% macro _upsert_merge_plan(target, preflight, found, settings, changes) %}
    {#- The MERGE's columns against the table's: {'names' (stored columns of the SELECT), 'types'
        ({name: the table's type} of those the table has), 'added' (the others: added by the MERGE's
        schema evolution),
        'null_columns' (columns the SELECT no longer has: NULL in the rows it updates),
        'partition_columns' ([{name, type}] as the table has them)}. A type the table cannot hold,
        or a changed set of columns under on_schema_change='fail', fails the run. -#}
    {% set names = joinery._upsert_stored_names(preflight.columns, found) %}
    {% set table_names = preflight.target_columns | map(attribute='name') | list %}
    {% do joinery._upsert_check_schema_unchanged(settings, changes, target.render(), table_names, names) %}
    {% set plan = {'names': names, 'types': {}, 'added': [], 'null_columns': [], 'partition_columns': []} %}
    {% for column in preflight.columns if column.name in names %}
        {% set stored = joinery._find_column(table_names, column.name) %}
        {% set table_type = (preflight.target_columns | selectattr('name', 'equalto', stored) | first)['type']
            if stored is not none else none %}
        {% if stored is none %}
            {% do plan.added.append(column.name) %}
        {% elif not joinery._upsert_types_compatible(table_type, column.type) %}
            {{ joinery._upsert_fail('column ' ~ column.name ~ ' is ' ~ column.type ~ ' in the model but ' ~ table_type
                ~ ' in ' ~ target ~ '; cast it in the model, or change the type with --full-refresh', changes) }}
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


{% macro _upsert_merge_report(target, merged, stats, settings, note=none) %}
    {#- The run's figures in its adapter response and log line: the MERGE's own result row on delta
        (num_affected_rows, num_updated_rows, num_deleted_rows, num_inserted_rows); on iceberg, whose
        MERGE returns none, the summary of the snapshot it committed (one statement). -#}
    {% set row = merged.rows[0] if merged is not none and merged.rows | length > 0 else none %}
    {% if row is not none and row | length >= 4 %}
        {% set figures = {'inserted': row[3] | int, 'updated': row[1] | int, 'deleted': row[2] | int} %}
    {% elif settings.file_format == 'iceberg' %}
        {% set figures = joinery._upsert_iceberg_figures(target, note) %}
    {% else %}
        {% set figures = none %}
    {% endif %}
    {% if figures is none %}
        {% do store_raw_result('main', message='MERGE', code='MERGE', agate_table=merged) %}
        {{ log('joinery_upsert ' ~ target ~ ': merged', info=true) }}
        {{ return(none) }}
    {% endif %}
    {% set summary = figures.inserted ~ ' inserted, ' ~ figures.updated ~ ' updated, ' ~ figures.deleted ~ ' deleted' %}
    {% do store_raw_result('main', message='MERGE ' ~ summary, code='MERGE',
        rows_affected=figures.inserted + figures.updated + figures.deleted, agate_table=merged) %}
    {{ log('joinery_upsert ' ~ target ~ ': ' ~ summary ~ ' (MERGE)', info=true) }}
{% endmacro %}


{% macro _upsert_iceberg_figures(target, note) %}
    {#- The rows an iceberg MERGE inserted, updated and deleted, from the summary of the table's newest
        snapshot (Iceberg 1.11+ writes `spark.merge-into.*` there); none when that snapshot is not
        the one this run's `note` committed (a MERGE that changed nothing may commit none). -#}
    {% set summary = fromjson(run_query('select to_json(summary) from ' ~ target.render()
        ~ '.snapshots order by committed_at desc limit 1').rows[0][0] or '{}') or {} %}
    {% if joinery._upsert_parse_build_note(summary.get('joinery.run')) != joinery._upsert_parse_build_note(note) %}
        {% set summary = {} %}
    {% endif %}
    {% set found = {} %}
    {% for name in ['inserted', 'updated', 'deleted'] %}
        {% do found.update({name: (summary or {}).get('spark.merge-into.num-target-rows-' ~ name, 0) | int}) %}
    {% endfor %}
    {{ return(found) }}
{% endmacro %}
