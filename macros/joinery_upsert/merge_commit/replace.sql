{#- A full build of a delta or iceberg table: one `create or replace table ... as select`, the table
    format's own atomic commit (the previous version stays readable by time travel). -#}

{% macro _upsert_merge_replace(target, existing, settings, prepared) %}
    {#- The whole table from the SELECT's live rows, in the model's write order (_upsert_write_order),
        with the one-row-per-key check in the same statement. joinery's facts go into the
        statement's own table properties: `joinery.unique_key`, `joinery.partition_by`, and
        `joinery.build`, the run's note (table_state.sql). `create or replace` cannot change a
        table's provider, so a table of another format is dropped first: not atomic, that one case. -#}
    {% set found = prepared.found %}
    {% set names = joinery._upsert_stored_names(prepared.preflight.columns, found) %}
    {% set note = joinery._upsert_build_note(prepared.preflight.started, settings, 'full', target,
        lead=prepared.lead, first=prepared.mode.reason == 'first build', feeds=prepared.mode.get('feeds'),
        record=joinery._upsert_run_record(prepared.mode)) %}
    {% set properties = joinery._upsert_format_properties(settings) %}
    {% do properties.update(joinery._upsert_model_properties()) %}
    {% do properties.update({'joinery.unique_key': tojson(settings.unique_key | map('lower') | list),
        'joinery.partition_by': tojson(settings.partition_by | map('lower') | list), 'joinery.build': note}) %}
    {% set assignments = [] %}
    {% for name, value in properties | dictsort %}
        {% do assignments.append(joinery._sql_string(name) ~ ' = ' ~ joinery._sql_string(value)) %}
    {% endfor %}
    {% if existing is not none and joinery._relation_provider(existing) != settings.file_format %}
        {% do adapter.drop_relation(existing) %}
    {% endif %}
    {% set location = config.get('location_root') %}
    {% set constraints = joinery._upsert_constraints(settings) %}
    {% do joinery._upsert_note_commit(settings, note) %}
    {% call statement('main') %}
        create or replace table {{ target.render() }}
        {{ joinery._upsert_storage_clause(settings, write_options=joinery._upsert_write_options(settings)) }}
        {%- if location %}
        location {{ joinery._sql_string(location ~ '/' ~ target.identifier) }}
        {%- endif %}
        tblproperties ({{ assignments | join(', ') }})
        as select {{ joinery._quoted_column_list(names) }}
        from ({{ joinery._upsert_checked_rows_sql(joinery._upsert_ordered_sql(prepared.changes, settings), found,
            settings) }}) as changed
        where {{ joinery._upsert_live_condition(found, 'changed') }}
        {%- if constraints.not_null or constraints.checks %}
            and (case when {{ joinery._upsert_live_condition(found, 'changed') }}
                then {{ joinery._upsert_constraint_conditions(constraints) }} else false end)
        {%- endif %}
    {% endcall %}
    {% do joinery._upsert_note_commit(settings, none) %}
    {% do joinery._upsert_persist_constraints(target, constraints) %}
    {#- Why the run built in full, in run_results.json as in the log. -#}
    {% do store_raw_result('main', message='CREATE OR REPLACE: full build (' ~ prepared.mode.reason ~ ')',
        code='CREATE', rows_affected=-1) %}
    {{ log('joinery_upsert ' ~ target ~ ': full build (' ~ prepared.mode.reason ~ '), ' ~ settings.file_format
        ~ ' create or replace', info=true) }}
{% endmacro %}


{% macro _upsert_ordered_sql(rows, settings) %}
    {#- The rows, range-partitioned by the write order (settings.write_order: the unique_key by
        default) so that each output task, and so each file, holds one slice of it; the one-row-per-key
        window over them then needs no other exchange, and sorts each task's rows by the key. Without
        a write order (write_order none), the rows as they are. -#}
    {% if not settings.write_order %}
        {{ return('select * from ' ~ rows) }}
    {% endif %}
    {{ return('select /*+ repartition_by_range(' ~ joinery._quoted_column_list(settings.write_order) ~ ') */ *\nfrom '
        ~ rows ~ ' as joinery_rows') }}
{% endmacro %}


{% macro _upsert_format_properties(settings) %}
    {#- The table properties joinery sets on the delta and iceberg tables it creates: deletion
        vectors on delta; format version 2 with merge-on-read on iceberg, so that a MERGE writes
        delete files instead of rewriting the data files it touches. -#}
    {% if settings.file_format == 'delta' %}
        {{ return({'delta.enableDeletionVectors': 'true'}) }}
    {% elif settings.file_format == 'iceberg' %}
        {% set properties = {'format-version': '2', 'write.delete.mode': 'merge-on-read',
            'write.update.mode': 'merge-on-read', 'write.merge.mode': 'merge-on-read'} %}
        {% if settings.file_bytes %}
            {% do properties.update({'write.target-file-size-bytes': settings.file_bytes | string}) %}
        {% endif %}
        {{ return(properties) }}
    {% endif %}
    {{ return({}) }}
{% endmacro %}


{% macro _upsert_note_commit(settings, note, merge=false) %}
    {#- `note` (table_state.sql, _upsert_build_note) into the next commit of this session: iceberg's
        snapshot summary (`joinery.run`), and for a MERGE (`merge`) Delta's commit userMetadata (a
        Delta full build notes in its own table properties instead); none clears it. Set right
        before the commit's statement and cleared right after it, so that no other write of the
        session carries it (docs/upsert.md says what another dbt thread can see meanwhile). -#}
    {% if settings.file_format == 'iceberg' %}
        {% set key = '`spark.sql.iceberg.snapshot-property.joinery.run`' %}
    {% elif settings.file_format == 'delta' and merge %}
        {% set key = '`spark.databricks.delta.commitInfo.userMetadata`' %}
    {% else %}
        {{ return(none) }}
    {% endif %}
    {% do run_query('reset ' ~ key if note is none else 'set ' ~ key ~ '=' ~ note) %}
{% endmacro %}
