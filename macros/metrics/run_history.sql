{#- The record of each joinery_upsert run, read back from the tables' own commits: each run's note
    (contract/table_state.sql, _upsert_build_note) holds its path, reason, start and invocation id,
    and the commit keeps its row counts and version (delta history, iceberg snapshots, a parquet
    table's `joinery.runs`). This reads them into one table a user can query, e.g. after each
    scheduled run or before the daily upkeep (which expires old commits):
    dbt run-operation joinery.run_history --args '{select: [tag:hourly]}'
    Docs: macros/metrics/metrics.yml and docs/operations.md, "The record of each run". -#}

{% macro run_history(select=none, schema=none, table='joinery_run_history') %}
    {{ return(adapter.dispatch('run_history', 'joinery')(select, schema, table)) }}
{% endmacro %}

{% macro default__run_history(select, schema, table) %}
    {% set patterns = joinery._maintain_all_patterns(select) %}
    {% if schema is not none %}
        {% do joinery._validate_identifier(schema, 'schema', 'run_history') %}
    {% endif %}
    {% if table is not string or not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', table) %}
        {{ joinery._raise_argument_error('run_history', 'table', table, 'expected a table name (an identifier) '
            ~ "for the records; default 'joinery_run_history'") }}
    {% endif %}
    {% if not execute %}
        {{ return([]) }}
    {% endif %}
    {% set records = [] %}
    {% for node in joinery._maintain_all_models(patterns) %}
        {% set relation = api.Relation.create(database=node.database, schema=node.schema, identifier=node.alias) %}
        {% set found = joinery._run_history_of(node.name, relation) %}
        {% do records.extend(found) %}
        {% do joinery._run_history_log(node.name, relation, found) %}
    {% endfor %}
    {% set history = api.Relation.create(schema=schema or target.schema, identifier=table) %}
    {% set added = joinery._run_history_write(history, records) %}
    {{ log('joinery.run_history: ' ~ records | length ~ ' records read, ' ~ added ~ ' new in ' ~ history,
        info=true) }}
    {{ return(records) }}
{% endmacro %}


{% macro _run_history_of(model_name, relation) %}
    {#- The records one model's table holds, newest first: one statement (delta: `describe history`;
        iceberg: its `snapshots`; parquet, orc, Hive: `show tblproperties`), none when it is absent. -#}
    {% set existing = adapter.get_relation(database=relation.database, schema=relation.schema,
        identifier=relation.identifier) %}
    {% if existing is none or not existing.is_table %}
        {{ return([]) }}
    {% endif %}
    {% set provider = joinery._relation_provider(existing) %}
    {% set records = [] %}
    {% if provider == 'delta' %}
        {% for row in run_query('describe history ' ~ relation.render()).rows %}
            {% set metrics = row['operationMetrics'] | string %}
            {% do records.append(joinery._run_history_record(model_name, relation, provider,
                joinery._run_history_delta_note(row), row['version'], row['timestamp'], {
                'rows': joinery._run_history_metric(metrics, 'numOutputRows'),
                'inserted': joinery._run_history_metric(metrics, 'numTargetRowsInserted'),
                'updated': joinery._run_history_metric(metrics, 'numTargetRowsUpdated'),
                'deleted': joinery._run_history_metric(metrics, 'numTargetRowsDeleted')})) %}
        {% endfor %}
    {% elif provider == 'iceberg' %}
        {% for row in run_query('select snapshot_id, cast(committed_at as string), to_json(summary) from '
                ~ relation.render() ~ '.snapshots order by committed_at desc').rows %}
            {% set summary = fromjson(row[2] or '{}') or {} %}
            {% set merged = 'spark.merge-into.num-target-rows-inserted' in summary %}
            {% do records.append(joinery._run_history_record(model_name, relation, provider,
                summary.get('joinery.run'), row[0], row[1], {
                'rows': none if merged else summary.get('added-records'),
                'inserted': summary.get('spark.merge-into.num-target-rows-inserted'),
                'updated': summary.get('spark.merge-into.num-target-rows-updated'),
                'deleted': summary.get('spark.merge-into.num-target-rows-deleted')})) %}
        {% endfor %}
    {% else %}
        {% set properties = joinery._table_properties(relation.render()) %}
        {% set runs = joinery._upsert_read_chunked_property(properties, 'joinery.runs')
            or properties.get('joinery.note') or '' %}
        {% for note in runs.split(';') if note %}
            {% do records.append(joinery._run_history_record(model_name, relation, provider, note, none, none, {})) %}
        {% endfor %}
    {% endif %}
    {{ return(records | reject('none') | list) }}
{% endmacro %}


{% macro _run_history_delta_note(row) %}
    {#- A delta commit's note: a MERGE's userMetadata, a full build's `joinery.build` table property
        (its operationParameters, as contract/table_state.sql reads it); none for other commits. -#}
    {% if row['operation'] == 'MERGE' %}
        {{ return(row['userMetadata']) }}
    {% endif %}
    {% set found = modules.re.search('joinery\\.build[\\\\"]*\\s*:\\s*[\\\\"]*([^"\\\\]*)',
        row['operationParameters'] | string) if 'TABLE AS SELECT' in row['operation'] else none %}
    {{ return(found.group(1) if found else none) }}
{% endmacro %}


{% macro _run_history_metric(text, name) %}
    {#- One of a delta commit's operationMetrics (a map, as JSON-like text) as an integer, or none. -#}
    {% set found = modules.re.search('["\']' ~ name ~ '["\']\\s*[:=]\\s*["\']?([0-9]+)', text) %}
    {{ return(found.group(1) | int if found else none) }}
{% endmacro %}


{% macro _run_history_record(model_name, relation, provider, text, version, committed_at, figures) %}
    {#- One commit as a record: its note (_upsert_parse_build_note) with the row counts and version
        the commit keeps (`figures`, `version`, `committed_at`; a parquet note carries its own); none
        for a commit without a joinery note of this table (another writer's, or maintenance's). -#}
    {% set note = joinery._upsert_parse_build_note(text) %}
    {% if note is none or note.get('table') != joinery._upsert_table_digest(relation) %}
        {{ return(none) }}
    {% endif %}
    {% set between = joinery._spark_seconds_between(note.started, committed_at) %}
    {% set seconds = between + (note.get('lead') or 0) | float if between is not none else note.get('seconds') %}
    {% set record = {'model': model_name, 'table_name': relation.render(), 'file_format': provider,
        'version': (version if version is not none else note.get('version')),
        'started_at': note.started, 'committed_at': committed_at, 'mode': note.mode,
        'path': note.get('path') or ('incremental' if note.mode == 'incremental' else 'full'),
        'reason': note.get('reason'), 'invocation_id': note.get('invocation'),
        'seconds': seconds | float if seconds is not none else none} %}
    {% for name in ['rows', 'inserted', 'updated', 'deleted'] %}
        {% set value = figures.get(name) if figures.get(name) is not none else note.get(name) %}
        {% do record.update({'rows_' ~ ('written' if name == 'rows' else name): value | int if value is not none
            else none}) %}
    {% endfor %}
    {% do record.update({'version': record.version | string if record.version is not none else none,
        'committed_at': committed_at | string if committed_at is not none else none}) %}
    {{ return(record) }}
{% endmacro %}


{% macro _run_history_columns() %}
    {#- The records table's columns, in order, with their types. -#}
    {{ return([['model', 'string'], ['table_name', 'string'], ['file_format', 'string'], ['version', 'string'],
        ['started_at', 'timestamp'], ['committed_at', 'timestamp'], ['mode', 'string'], ['path', 'string'],
        ['reason', 'string'], ['invocation_id', 'string'], ['seconds', 'double'], ['rows_written', 'bigint'],
        ['rows_inserted', 'bigint'], ['rows_updated', 'bigint'], ['rows_deleted', 'bigint']]) }}
{% endmacro %}


{% macro _run_history_write(history, records) %}
    {#- Add the records `history` does not hold yet (by table, version and start), creating it first:
        it keeps records that the tables' own history no longer does (delta's log retention,
        iceberg's expired snapshots, parquet's last 20). Four statements (two are counts for the
        log); returns how many records were new. -#}
    {% set columns = joinery._run_history_columns() %}
    {% set ddl = [] %}
    {% for name, type in columns %}
        {% do ddl.append(name ~ ' ' ~ type) %}
    {% endfor %}
    {% do run_query('create table if not exists ' ~ history ~ ' (' ~ ddl | join(', ')
        ~ ', read_at timestamp) using parquet') %}
    {% if not records %}
        {{ return(0) }}
    {% endif %}
    {% set rows = [] %}
    {% for record in records %}
        {% set values = [] %}
        {% for name, type in columns %}
            {% set value = record[name] %}
            {% do values.append('null' if value is none else ('cast(' ~ joinery._sql_string(value) ~ ' as ' ~ type ~ ')'
                if type in ['string', 'timestamp'] else value | string)) %}
        {% endfor %}
        {% do rows.append('(' ~ values | join(', ') ~ ')') %}
    {% endfor %}
    {% set names = columns | map('first') | join(', ') %}
    {% set same = "coalesce(old.version, '') = coalesce(new.version, '') and old.table_name = new.table_name "
        ~ 'and old.started_at <=> new.started_at' %}
    {% set before = run_query('select count(*) from ' ~ history).rows[0][0] %}
    {% do run_query('insert into ' ~ history ~ ' select new.*, current_timestamp() from values ' ~ rows | join(',\n')
        ~ ' as new(' ~ names ~ ')\nwhere not exists (select 1 from ' ~ history ~ ' as old where ' ~ same ~ ')') %}
    {{ return(run_query('select count(*) from ' ~ history).rows[0][0] - before) }}
{% endmacro %}


{% macro _run_history_log(model_name, relation, records) %}
    {#- One line per model: its records, its newest run, and the mean seconds of its incremental runs
        against its full builds (the question docs/operations.md answers over time). -#}
    {% if not records %}
        {{ log('joinery.run_history ' ~ relation ~ ' (model ' ~ model_name ~ '): no records', info=true) }}
        {{ return(none) }}
    {% endif %}
    {% set parts = [] %}
    {% for mode in ['incremental', 'full'] %}
        {% set times = records | selectattr('mode', 'equalto', mode) | map(attribute='seconds')
            | reject('none') | list %}
        {% if times %}
            {% do parts.append(mode ~ ' %.1f s on average over %d' | format(times | sum / times | length,
                times | length)) %}
        {% endif %}
    {% endfor %}
    {% set newest = records[0] %}
    {{ log('joinery.run_history ' ~ relation ~ ' (model ' ~ model_name ~ ', ' ~ newest.file_format ~ '): '
        ~ records | length ~ ' records; newest ' ~ newest.path ~ ' (' ~ newest.reason ~ ') at ' ~ newest.started_at
        ~ ('; ' ~ parts | join(', ') if parts else ''), info=true) }}
{% endmacro %}
