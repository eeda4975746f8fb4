{#- joinery_upsert on parquet, orc and Hive SerDe tables: a new version written to a fresh directory
    through a staging table, checked (verify.sql), then committed by metastore calls (journal.sql).
    docs/upsert.md ("Crash safety, step by step") names the macro of each step. -#}

{% macro _upsert_rewrite_prepare(target, existing, sql, settings, mode, state=none) %}
    {#- The strategy's `prepare` (commit_strategy.sql), before the new version is written: the table
        read (and what a killed run left recovered), the changes staged and checked. {'table',
        'changes', 'change_info', 'stats': none, 'skip': no changed rows, 'tombstones_only', 'mode'}.
        Nothing of it touches the live table. `state.properties`: the table's, when the run read them. -#}
    {% set properties = (state or {}).get('properties') %}
    {% set table = joinery._upsert_read_table(target, existing, settings, mode.full, properties) %}
    {% set changes = joinery._upsert_stage_changes(sql, target) %}
    {% set change_info = joinery._upsert_validate_changes(changes, settings, with_partitions=not table.full_build,
        full_build=table.full_build, companion=joinery._upsert_tombstones_companion(target, settings) if not table.full_build else none) %}
    {% do joinery._upsert_tombstone_columns(change_info, settings, changes) %}
    {% set prepared = {'table': table, 'changes': changes, 'change_info': change_info, 'mode': mode,
        'stats': change_info.stats if not table.full_build else none,
        'skip': not table.full_build and change_info.rows == 0, 'tombstones_only': false} %}
    {% if not prepared.skip and not table.full_build %}
        {% do prepared.update({'tombstones_only': joinery._upsert_only_tombstones_change(target, changes,
            change_info, settings)}) %}
    {% endif %}
    {{ return(prepared) }}
{% endmacro %}


{% macro _upsert_rewrite_write(target, existing, settings, prepared) %}
    {#- The new version written into its own directory and checked, and the journal of its commit,
        into `prepared` ('version', 'facts', 'journal', 'recreate'); nothing when nothing changed or
        only tombstones did. The overlap check of a managed table comes last. -#}
    {% if prepared.skip or prepared.tombstones_only %}
        {{ return(none) }}
    {% endif %}
    {% set table = prepared.table %}
    {% set changes = prepared.changes %}
    {% do table.update({'root': joinery._upsert_version_root(target, existing, table)}) %}
    {% set version = joinery._upsert_write_version(target, table, changes, prepared.change_info, settings) %}
    {% set facts = joinery._upsert_verify_version(target, version.stage, version.dir, version.plan,
        prepared.change_info, table.full_build, settings, changes) %}
    {% set recreate = existing is not none and (not table.managed or version.plan.recreate) %}
    {#- The run's time, to the commit: the commit records it (`joinery.costs`, the cost rule's), and its
        note the run's record with the figures the check computed (a parquet table has no commit log
        of its own to count them, as delta's and iceberg's do). -#}
    {% set figures = {'version': table.run_id, 'rows': facts.written} %}
    {% do figures.update(facts.figures or {}) %}
    {% if prepared.mode.get('started') is not none %}
        {% do figures.update({'seconds': '%.3f' | format(modules.datetime.datetime.now().timestamp()
            - prepared.mode.started)}) %}
    {% endif %}
    {% set note = joinery._upsert_build_note(prepared.change_info.started, settings,
        'full' if table.full_build else 'incremental', target, watermark=prepared.change_info.stats.watermark,
        feeds=prepared.mode.get('feeds'), record=joinery._upsert_run_record(prepared.mode, figures)) %}
    {% do table.update({'costs': joinery._upsert_run_costs(prepared.mode), 'note': note,
        'runs': joinery._upsert_run_records(table.properties, note)}) %}
    {% do prepared.update({'version': version, 'facts': facts, 'recreate': recreate,
        'journal': joinery._upsert_journal(target, table, version, facts, recreate)}) %}
    {% if table.managed %}
        {% do joinery._upsert_check_no_overlap(target, table.root, table.properties, table.run_id, version.dir,
            changes) %}
    {% endif %}
{% endmacro %}


{% macro _upsert_rewrite_commit(target, existing, settings, prepared) %}
    {#- Commit the checked version (journal.sql), or nothing when nothing changed or only tombstones
        did: the table then keeps its files and location. The cached changes are dropped either way. -#}
    {% set table = prepared.table %}
    {% if prepared.skip or prepared.tombstones_only %}
        {% set message = 'no changed rows' if prepared.skip else prepared.change_info.rows ~ ' tombstones changed' %}
        {% do joinery._upsert_report_unchanged(target, message) %}
    {% else %}
        {% do joinery._upsert_commit(target, existing, table, prepared.version, prepared.journal, prepared.recreate,
            settings) %}
        {% set facts = prepared.facts %}
        {{ log('joinery_upsert ' ~ target ~ ': ' ~ facts.summary
            ~ ('' if not table.full_build else ' (' ~ prepared.mode.reason ~ ')') ~ '; version ' ~ table.run_id ~ ' has ' ~ facts.written ~ ' rows' ~ ((' in ' ~ facts.produced | length
            ~ ' rewritten partitions, ' ~ prepared.journal['drop'] | length ~ ' dropped')
            if prepared.change_info.partition_by else ''), info=true) }}
    {% endif %}
    {% do joinery._upsert_drop_changes(prepared.changes) %}
{% endmacro %}


{% macro _upsert_read_table(target, existing, settings, full_build, properties=none) %}
    {#- What the run builds on: the table's joinery properties after recovering what a killed run
        left (_upsert_recover), whether joinery built it (`managed`: it has `joinery.root`), whether
        this is a full build (`full_build`: the run's build mode), and the properties this run
        stores. The run id names its version. -#}
    {% set target_sql = target.render() %}
    {% if properties is none %}
        {% set properties = joinery._table_properties(target_sql) if existing is not none else {} %}
    {% endif %}
    {% set managed = 'joinery.root' in properties %}
    {% if managed and joinery._upsert_recover(target, properties) %}
        {% set properties = joinery._table_properties(target_sql) %}
    {% endif %}
    {% set table = {'properties': properties, 'managed': managed,
        'full_build': full_build or existing is none or not managed,
        'run_id': run_started_at.strftime('%Y%m%d%H%M%S%f') ~ '_' ~ invocation_id[:8],
        'unique_key': tojson(settings.unique_key | map('lower') | list),
        'location_root': config.get('location_root') or '', 'options': joinery._upsert_options_text(settings)} %}
    {% do table.update({'options_changed': managed and properties.get('joinery.options') != table.options}) %}
    {% if managed %}
        {% do joinery._upsert_check_built_with(target_sql, table, settings) %}
    {% endif %}
    {{ return(table) }}
{% endmacro %}


{% macro _upsert_check_built_with(target_sql, table, settings) %}
    {#- A joinery table keeps what it was built with. Its unique_key: matched on another key, one
        change could replace several rows, or two changes one row (the row count check cannot tell).
        Its options (a Hive SerDe table reads its files through the SerDe its definition names, and
        a commit only moves its location). Both change with --full-refresh. Its location_root, even
        then: joinery does not move a table's files. -#}
    {% set properties = table.properties %}
    {% if not table.full_build and properties.get('joinery.unique_key') != table.unique_key %}
        {{ joinery._upsert_argument_error('unique_key', settings.unique_key, 'the table was built with unique_key '
            ~ properties.get('joinery.unique_key') ~ ', and matching its rows on another key can merge or drop '
            ~ 'rows: change unique_key with --full-refresh') }}
    {% endif %}
    {% if properties.get('joinery.location_root') != table.location_root %}
        {{ joinery._upsert_argument_error('location_root', table.location_root, 'the table was built with '
            ~ 'location_root ' ~ tojson(properties.get('joinery.location_root')) ~ ' (its versions are under '
            ~ properties['joinery.root'] ~ '), and joinery does not move a table: set location_root back, or drop '
            ~ target_sql ~ ' and run again to build it at the new root (the old root keeps its files)') }}
    {% endif %}
    {% if table.options_changed and not table.full_build %}
        {{ joinery._upsert_argument_error('options', settings.options, 'the table was built with options '
            ~ properties.get('joinery.options') ~ ', and its definition could not read files written with '
            ~ 'others: change options with --full-refresh') }}
    {% endif %}
{% endmacro %}


{% macro _upsert_version_root(target, existing, table) %}
    {#- Where versions live: the root the table was built with (stored qualified), else
        `<location_root>/<alias>`, else `<schema location>/<alias>__joinery`: not the folder of a
        managed table of that name, since dbt-spark's `table`, if the model is switched back to it,
        creates its own there, which fails with LOCATION_ALREADY_EXISTS on a folder holding versions.
        A table joinery did not build (a former `table` model) that lives at the root would delete
        that directory when dropped, so the versions then go beside it. -#}
    {% if table.managed %}
        {{ return(table.properties['joinery.root']) }}
    {% elif table.location_root %}
        {% set root = joinery._upsert_qualified_location(target, table.location_root ~ '/' ~ target.identifier) %}
    {% else %}
        {% set root = joinery._upsert_schema_location(target.schema) ~ '/' ~ target.identifier ~ '__joinery' %}
    {% endif %}
    {% if existing is not none and joinery._describe_relation(target.render())['location'].startswith(root) %}
        {% set root = root ~ '__joinery' %}
    {% endif %}
    {{ return(root) }}
{% endmacro %}


{% macro _upsert_write_version(target, table, changes, change_info, settings) %}
    {#- Plan the new version and write it into its own directory `<root>/v_<run id>` through a
        staging table located there; on a joinery table, a `writing` journal names the directory
        first, so a run killed while writing leaves the next run a directory to delete. One INSERT
        per SELECT: Spark 4 does not reuse a cached view whose query uses a CTE twice (compact's,
        fk_join's) when one statement names the view twice. -#}
    {% set target_sql = target.render() %}
    {% set version_dir = joinery._upsert_version_directory(table.root, table.run_id) %}
    {% set target_info = joinery._describe_relation(target_sql) if table.managed else none %}
    {% set plan = joinery._upsert_plan(target_sql, target_info, table.full_build, changes, change_info, settings,
        table.options_changed) %}
    {% set stage_sql = joinery._upsert_work_table(target, 'stage') %}
    {% if table.managed %}
        {% do joinery._upsert_set_pending(target_sql, {'run': table.run_id, 'state': 'writing', 'dir': version_dir}) %}
    {% endif %}
    {% do run_query('create table ' ~ stage_sql ~ ' (\n    ' ~ joinery._upsert_column_ddl(plan.columns) ~ '\n)\n'
        ~ joinery._upsert_storage_clause(settings, staging=true) ~ '\nlocation ' ~ joinery._sql_string(version_dir)) %}
    {% if change_info.partition_by and settings.file_format == 'hive' %}
        {% do run_query('set hive.exec.dynamic.partition.mode=nonstrict') %}
    {% endif %}
    {% for select_sql in plan.selects[:-1] %}
        {% do run_query('insert into ' ~ stage_sql ~ '\n' ~ select_sql) %}
    {% endfor %}
    {% call statement('main') %}
        insert into {{ stage_sql }}
        {{ plan.selects[-1] }}
    {% endcall %}
    {{ return({'dir': version_dir, 'plan': plan, 'stage': stage_sql,
        'partitioned': change_info.partition_by | length > 0,
        'target_location': target_info.location if target_info else none}) }}
{% endmacro %}
