{#- An incremental run of a joinery_upsert model: where the table stands against its sources (one
    probe), then either the new delta rows applied to the table (apply.sql), or (a new pull, new or
    retyped columns) a full compaction compared with the table (diff.sql). The run's plan, what the
    probe found, rides in the compiled SQL to the materialization (joinery_upsert's contract/plan.sql). -#}

{% macro _compaction_incremental_sql(snapshot, deltas, target, identity_names, settings, defaults, removed) %}
    {#- The changed rows and delete markers (under the model's deleted_column) that turn the previous
        compacted table into the new one, with the run's plan; the full compaction instead when the
        cost rule rebuilds. -#}
    {#- Every input's columns, the snapshot's too, in one statement. -#}
    {% set described = joinery._columns_of_many([target] + deltas + [snapshot]) %}
    {% set plan = joinery._compaction_plan([target] + deltas, identity_names, settings, defaults, removed,
        described[:-1]) %}
    {% if not execute %}
        {{ return('select 1 as joinery_unresolved') }}
    {% endif %}
    {% do settings.update({'snapshot_names': described[-1] | map(attribute='name') | list}) %}
    {#- The table is relation 0 of the plan: its columns are the entries it is a source of. -#}
    {% set target_names = [] %}
    {% for entry in plan if 0 in entry.sources %}
        {% do target_names.append(entry.sources[0]) %}
    {% endfor %}
    {% for column in target_names if joinery._plan_entry(plan, column) is none %}
        {{ joinery._raise_argument_error('compact', 'removed', removed,
            'the newest delta no longer has column ' ~ column ~ ' of ' ~ target ~ ', and Spark cannot drop a column '
            ~ 'of a parquet table in place: run this model once with --full-refresh to drop it') }}
    {% endfor %}
    {% set compared = namespace(value=false) %}
    {% for entry in plan if 0 in entry.sources and entry.source_types[0] != entry.type %}
        {% set compared.value = true %}
    {% endfor %}
    {% set added = [] %}
    {% for entry in plan if 0 not in entry.sources %}
        {% do added.append(entry.name) %}
    {% endfor %}
    {#- A MERGE that compares versions adds new columns itself (schema evolution); a rewrite compares
        the table's rows, which lack them. -#}
    {% set compared.value = compared.value or (added and not joinery._compaction_versioned(settings)) %}
    {#- The table's earlier runs, read once for the probe's watermark and the cost rule. -#}
    {% set previous = joinery._upsert_previous_state() %}
    {% set state = joinery._compaction_probe(snapshot, target, deltas, plan, settings, previous) %}
    {% set mode = joinery._upsert_build_mode(previous, has_changes=state.rows != 0 or state.rebase or compared.value) %}
    {% if mode.full %}
        {{ return(joinery._upsert_planned_sql(joinery._compaction_full_build_sql(snapshot, deltas, identity_names,
            settings, defaults, removed), {'mode': 'full', 'reason': mode.reason})) }}
    {% endif %}
    {% set run = {'mode': 'incremental', 'reason': mode.reason, 'built': mode.built, 'costs': mode.costs,
        'started': state.started, 'lead': state.lead} %}
    {% set tombstones = joinery._compaction_tombstones_sql(target, plan, settings, state.watermark_sql) %}
    {% set path = 'a new snapshot: full compaction compared with the table' if state.rebase
        else 'new columns: compared with the table' if compared.value
        else 'apply the new delta rows' ~ (' (new columns ' ~ added | join(', ') ~ ')' if added else '') %}
    {#- info: a rebase reads every source in full, so a run's output says why it took longer. -#}
    {{ log('joinery.compact ' ~ target ~ ': ' ~ path, info=true) }}
    {% if state.rebase or compared.value %}
        {% do run.update({'reads_target': true}) %}
        {{ return(joinery._upsert_planned_sql(joinery._compaction_compared_sql(snapshot, deltas, target, identity_names,
            plan, described, target_names, settings, state, tombstones, defaults, removed), run)) }}
    {% endif %}
    {% do run.update(joinery._compaction_apply_plan(state, plan, described[0], settings)) %}
    {{ return(joinery._upsert_planned_sql(joinery._compaction_apply_deltas_sql(deltas, target, plan, settings, state,
        tombstones), run)) }}
{% endmacro %}


{% macro _compaction_compared_sql(snapshot, deltas, target, identity_names, plan, described, target_names, settings,
        state, tombstones, defaults, removed) %}
    {#- The runs that compare a full compaction with the table (diff.sql): a new pull, whose full
        compaction supersedes the older deltas and their deletes (every tombstone is derived again),
        or columns whose type changed (the table plays the snapshot; only the new delta rows are read). -#}
    {% if state.rebase %}
        {% set full_plan = joinery._compaction_plan([snapshot] + deltas, identity_names, settings, defaults, removed,
            [described[-1]] + described[1:-1]) %}
        {% set full_sql = joinery._compaction_full_sql(snapshot, deltas, full_plan, settings, state.snapshot_newest_sql,
            with_deletes=settings.tombstones) %}
        {{ return(joinery._compaction_diff_sql(full_sql, full_plan, target, target_names, settings, tombstones,
            rederived=true)) }}
    {% endif %}
    {% set full_sql = joinery._compaction_full_sql(target, deltas, plan, settings, state.snapshot_newest_sql,
        state.watermark_sql, tombstones=tombstones.live if tombstones else none, with_deletes=settings.tombstones) %}
    {{ return(joinery._compaction_diff_sql(full_sql, plan, target, target_names, settings, tombstones)) }}
{% endmacro %}


{% macro _compaction_apply_plan(state, plan, target_columns, settings) %}
    {#- The plan of a run that applies the new delta rows (contract/plan.sql): their count and deletes,
        the key ranges and partitions they fall in (the MERGE reads only those files), the newest
        loaded_at among them (the next run's watermark, kept in the commit's note), the version
        columns (a change older than the table's row changes nothing), and the columns of the SELECT
        and of the table (the MERGE's columns, without a statement to read them). -#}
    {% set columns = [] %}
    {% for entry in plan %}
        {% do columns.append({'name': entry.name, 'type': entry.type}) %}
    {% endfor %}
    {% do columns.append({'name': settings.marker, 'type': 'boolean'}) %}
    {% set stored = [] %}
    {% for column in target_columns %}
        {% do stored.append({'name': column.name, 'type': column.dtype}) %}
    {% endfor %}
    {{ return({'rows': state.rows, 'deletes': state.deletes, 'key_ranges': state.key_ranges,
        'partitions': state.partitions, 'watermark': state.new_watermark,
        'reads_target': not joinery._compaction_versioned(settings),
        'versions': joinery._compaction_version_columns(settings) if joinery._compaction_versioned(settings) else none,
        'columns': columns, 'target_columns': stored}) }}
{% endmacro %}


{% macro _compaction_probe(snapshot, target, deltas, plan, settings, previous) %}
    {#- Where the table stands against its sources, in one statement: the watermark (the newest
        loaded_at the table applied: from its last commit's note, else read from the table once), the
        snapshot's newest loaded_at, whether the snapshot is a new full pull (rebase: one newer than
        the watermark), and of the new delta rows (loaded_at above the watermark): their count and
        deletes, the key ranges and partitions they fall in, their newest loaded_at; and the time on
        Spark's clock (the run's start, for the cost rule). A filtered scan of the deltas, no ranking:
        the winners the run's SELECT ranks are among these rows. A pull stamped before the newest delta batch the table holds
        is not taken for a new one (docs/compaction.md, "New snapshots"). Without loaded_at every
        delta row is read again each run: no watermark, no figures. `previous`: the table's earlier
        runs (_upsert_previous_state), whose newest note holds the watermark. -#}
    {% set lead_from = modules.datetime.datetime.now().timestamp() %}
    {% set state = {'watermark': none, 'watermark_sql': none, 'snapshot_newest': none, 'snapshot_newest_sql': none,
        'rebase': false, 'rows': none, 'deletes': none, 'key_ranges': none, 'partitions': none,
        'new_watermark': none, 'started': none, 'lead': none} %}
    {% if settings.loaded_at is none %}
        {{ return(state) }}
    {% endif %}
    {% set probe_sql = joinery._compaction_probe_sql(snapshot, target, deltas, plan, settings, previous) %}
    {% set lead = modules.datetime.datetime.now().timestamp() - lead_from %}
    {% set row = run_query(probe_sql).rows[0] %}
    {% set loaded_type = joinery._plan_entry(plan, settings.loaded_at).type %}
    {% do state.update({'watermark': row[0], 'snapshot_newest': row[1], 'rebase': row[1] is not none
            and (row[0] is none or row[2]),
        'key_ranges': fromjson(row[3] or '[]'), 'rows': row[4] | int, 'deletes': row[5] | int,
        'partitions': row[6], 'new_watermark': (fromjson(row[7] or '{}') or {}).get('value'), 'started': row[8],
        'lead': lead}) %}
    {% do state.update({'watermark_sql': joinery._typed_literal(row[0], loaded_type) if row[0] is not none else none,
        'snapshot_newest_sql': joinery._typed_literal(row[1], loaded_type) if row[1] is not none else none}) %}
    {{ return(state) }}
{% endmacro %}


{% macro _compaction_probe_sql(snapshot, target, deltas, plan, settings, previous) %}
    {#- The probe's statement (_compaction_probe). -#}
    {% set loaded_entry = joinery._plan_entry(plan, settings.loaded_at) %}
    {% set noted = (previous.built or {}).get('watermark') %}
    {% set watermark_sql = joinery._typed_literal(noted, loaded_entry.type) if noted is not none
        else '(select max(applied.' ~ joinery._quote_identifier(settings.loaded_at) ~ ') from ' ~ target ~ ' as applied)' %}
    {% set snapshot_loaded = joinery._find_column(settings.snapshot_names, settings.loaded_at) %}
    {% set newest_sql = joinery._compaction_snapshot_newest_sql(snapshot, snapshot_loaded, loaded_entry.type)
        if snapshot_loaded else 'cast(null as string)' %}
    {% set superseded_sql = '(select max(newest.' ~ joinery._quote_identifier(snapshot_loaded) ~ ') from ' ~ snapshot
        ~ ' as newest)' if snapshot_loaded else none %}
    {% set tombstones = joinery._compaction_tombstones_sql(target, plan, settings, watermark_sql) %}
    {% set partition_names = settings.get('equal_columns', []) %}
    {% set probe_sql %}
with

{{ joinery._compaction_delta_ctes(deltas, plan, settings, superseded_sql, watermark_sql,
    tombstones=tombstones.live if tombstones else none) }}

select
    {{ joinery._watermark_text_sql(watermark_sql, loaded_entry.type) }} as joinery_watermark,
    {{ newest_sql }} as joinery_snapshot_newest,
    cast({{ newest_sql }} as {{ loaded_entry.type }}) > {{ watermark_sql }} as joinery_new_pull,
    {{ joinery._key_ranges_sql('select * from delta_rows', settings.key[0], 16) }} as joinery_key_ranges,
    count(*) as joinery_new_rows,
    count_if({{ joinery._compaction_deleted_sql(settings) }}) as joinery_new_deletes,
    {{ ('to_json(array_sort(collect_set(array(' ~ joinery._partition_casts(partition_names) | join(', ') ~ '))))')
        if partition_names else 'cast(null as string)' }} as joinery_partitions,
    to_json(named_struct('value', max({{ joinery._quote_identifier(settings.loaded_at) }})),
        map('timestampFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSSXXX')) as joinery_newest,
    cast(current_timestamp() as string) as joinery_started
from delta_rows
    {%- endset %}
    {{ return(probe_sql) }}
{% endmacro %}
