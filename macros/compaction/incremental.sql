{#- An incremental run of a joinery_upsert model: where the table stands against its sources, then
    either the new delta rows applied to the table's rows for their keys, or (a new pull, new
    columns) a full compaction compared with the table (diff.sql). -#}

{% macro _compaction_incremental_sql(snapshot, deltas, target, identity_names, settings, defaults, removed) %}
    {#- An incremental run of a joinery_upsert model: the changed rows and delete markers
        (under the model's deleted_column) that turn the previous compacted table into the new one.
        - Usually: the new delta rows (loaded_at above the table's newest loaded_at; without
          loaded_at, all of them) against the table's rows for their keys. A version already in the
          table yields nothing, so applying a delta twice changes nothing.
        - A new full snapshot (its newest loaded_at above the table's), or new columns from a delta:
          the full compaction, compared with the table row by row (rows that differ, plus delete
          markers for keys it no longer has). -#}
    {% set plan = joinery._compaction_plan([target] + deltas, identity_names, settings, defaults, removed) %}
    {% if not execute %}
        {{ return('select 1 as joinery_unresolved') }}
    {% endif %}
    {% set target_columns = joinery._columns_of(target) %}
    {% set target_names = target_columns | map(attribute='name') | list %}
    {% for column in target_names if joinery._plan_entry(plan, column) is none %}
        {{ joinery._raise_argument_error('compact', 'removed', removed,
            'the newest delta no longer has column ' ~ column ~ ' of ' ~ target ~ ', and Spark cannot drop a column '
            ~ 'of a parquet table in place: run this model once with --full-refresh to drop it') }}
    {% endfor %}
    {% set reshaped = namespace(value=false) %}
    {% for entry in plan if 0 not in entry.sources or entry.source_types[0] != entry.type %}
        {% set reshaped.value = true %}
    {% endfor %}

    {% set state = joinery._compaction_snapshot_state(snapshot, target, plan, settings) %}

    {#- The companion of deleted keys (joinery_upsert keeps it for this model: upsert_tombstones_relation);
        none before the first build that kept one. Past tombstone_retention, a tombstone counts as none. -#}
    {% set tombstones = joinery._compaction_tombstones_sql(target, plan, settings, state.watermark_sql) %}
    {% set path = 'a new snapshot: full compaction compared with the table' if state.rebase
        else 'new columns: compared with the table' if reshaped.value else 'apply the new delta rows' %}
    {#- info: a rebase reads every source in full, so a run's output says why it took longer. -#}
    {{ log('joinery.compact ' ~ target ~ ': ' ~ path, info=true) }}
    {% if state.rebase %}
        {#- A new pull supersedes older deltas, and their deletes with them: every tombstone is derived again. -#}
        {% set full_plan = joinery._compaction_plan([snapshot] + deltas, identity_names, settings, defaults, removed) %}
        {% set full_sql = joinery._compaction_full_sql(snapshot, deltas, full_plan, settings, state.snapshot_newest_sql,
            with_deletes=settings.tombstones) %}
        {{ return(joinery._compaction_diff_sql(full_sql, full_plan, target, target_names, settings, tombstones,
            rederived=true)) }}
    {% endif %}
    {% if reshaped.value %}
        {#- The table plays the snapshot; only the new delta rows are read. -#}
        {% set full_sql = joinery._compaction_full_sql(target, deltas, plan, settings, state.snapshot_newest_sql,
            state.watermark_sql, tombstones=tombstones.live if tombstones else none, with_deletes=settings.tombstones) %}
        {{ return(joinery._compaction_diff_sql(full_sql, plan, target, target_names, settings, tombstones)) }}
    {% endif %}
    {{ return(joinery._compaction_apply_deltas_sql(deltas, target, plan, settings, state, tombstones)) }}
{% endmacro %}


{% macro _compaction_snapshot_state(snapshot, target, plan, settings) %}
    {#- Where the table stands against its sources: the watermark (the table's newest loaded_at, raw
        and as a literal), the snapshot's newest loaded_at (raw and as a literal), and whether the
        snapshot is a new full pull (rebase): one newer than the watermark. All none (and no rebase)
        without loaded_at. The watermark is data in the table, so it commits with the rows; a pull
        stamped before the newest delta batch the table holds is not taken for a new one
        (docs/compaction.md, "New snapshots"). One statement. -#}
    {% set state = {'watermark': none, 'watermark_sql': none, 'snapshot_newest': none, 'snapshot_newest_sql': none,
        'rebase': false} %}
    {% if settings.loaded_at is none %}
        {{ return(state) }}
    {% endif %}
    {% set loaded_entry = joinery._plan_entry(plan, settings.loaded_at) %}
    {% set snapshot_loaded = joinery._find_column(joinery._column_names(snapshot), settings.loaded_at) %}
    {% set probe_sql %}
        select w, s, cast(s as {{ loaded_entry.type }}) > cast(w as {{ loaded_entry.type }})
        from (
            select
            (select cast(max({{ joinery._quote_identifier(settings.loaded_at) }}) as string) from {{ target }}) as w,
            {% if snapshot_loaded %}
            {{ joinery._compaction_snapshot_newest_sql(snapshot, snapshot_loaded, loaded_entry.type) }} as s
            {% else %}
            cast(null as string) as s
            {% endif %}
        )
    {% endset %}
    {% set probe = run_query(probe_sql).rows[0] %}
    {% if probe[0] is not none %}
        {% do state.update({'watermark_sql': joinery._typed_literal(probe[0], loaded_entry.type)}) %}
    {% endif %}
    {% if probe[1] is not none %}
        {% do state.update({'snapshot_newest_sql': joinery._typed_literal(probe[1], loaded_entry.type),
            'rebase': probe[0] is none or probe[2]}) %}
    {% endif %}
    {% do state.update({'watermark': probe[0], 'snapshot_newest': probe[1]}) %}
    {{ return(state) }}
{% endmacro %}


{% macro _compaction_apply_deltas_sql(deltas, target, plan, settings, state, tombstones) %}
    {#- The usual incremental run: the new delta rows against the table's rows for their keys. A
        version already in the table yields nothing, so applying a delta twice changes nothing. -#}
    {% set delta_ctes = joinery._compaction_delta_ctes(deltas, plan, settings, state.snapshot_newest_sql,
        state.watermark_sql, tombstones=tombstones.live if tombstones else none) %}
    {% set touched_sql = joinery._compaction_new_rows(delta_ctes, plan, settings, 't').touched %}
    {% set names = plan | map(attribute='name') | list %}
    {% set incremental_sql %}
with

{{ delta_ctes }},

{#- One streaming pass over the table (its touched partitions) picks the rows of the keys the new
    deltas touch: their keys as they are, so this pass does not wait for the ranking. #}
matched_rows as (
    select {{ joinery._compaction_hint(settings, 'd') }}
        t.*,
        true as _joinery_present
    from {{ target }} as t
    left semi join delta_rows as d
        on {{ joinery._compaction_key_match(settings, 't', 'd') }}
    {%- if touched_sql is not none %}
    where {{ touched_sql }}
    {%- endif %}
),

versions as (
    select {{ joinery._compaction_hint(settings, 'm') }}
        w.*,
        coalesce(m._joinery_present, false) as _joinery_present,
        {{ joinery._compaction_version_wins(settings, 'w', 'm') }} as _joinery_wins,
        {{ joinery._compaction_same_values(plan, 'w', 'm') | join(' and ') }} as _joinery_identical
    from delta_winners as w
    left join matched_rows as m
        on {{ joinery._compaction_key_match(settings, 'w', 'm') }}
)

select
    {{ joinery._quoted_column_list(names) }},
    _joinery_is_delete as {{ joinery._quote_identifier(settings.marker) }}
from versions
where
    (not _joinery_present and not _joinery_is_delete)
    or (_joinery_present and _joinery_wins and (_joinery_is_delete or not _joinery_identical))
    {%- if settings.tombstones %}
    {#- A winning delete of a key the table does not hold records its tombstone (it beat the old one). #}
    or (not _joinery_present and _joinery_is_delete)
    {%- endif %}
    {%- if tombstones and tombstones.expired %}

union all

{{ joinery._compaction_purge_sql(tombstones.expired, plan, settings) }}
    {%- endif %}
    {%- endset %}
    {{ return(incremental_sql) }}
{% endmacro %}


{% macro _compaction_new_rows(delta_ctes, plan, settings, alias) %}
    {#- On a partitioned model, a literal predicate on `alias` that keeps the table's partitions an
        incremental run's new delta rows fall in (`false` for none), from one pass over them; none
        unpartitioned (no statement). Spark prunes a literal predicate before listing files; the
        run-time (dynamic) pruning that the `=` on partition columns allows is dropped when Spark
        cannot reuse the broadcast, and the benchmark found it dropped here: every partition of the
        table was read. -#}
    {% set partition_columns = [] %}
    {% for column in settings.get('equal_columns', []) %}
        {% do partition_columns.append(joinery._plan_entry(plan, column)) %}
    {% endfor %}
    {% if not partition_columns %}
        {{ return({'touched': none}) }}
    {% endif %}
    {% set rows_sql = 'with\n' ~ delta_ctes ~ '\nselect * from delta_rows' %}
    {% set names = partition_columns | map(attribute='name') | list %}
    {% set facts_sql = 'select ' ~ joinery._partition_list_sql(names) ~ '\nfrom (\n'
        ~ joinery._partition_rollup_sql(rows_sql, names, ['count(*) as joinery_rows']) ~ '\n)' %}
    {{ return({'touched': joinery._partition_predicate(partition_columns,
        joinery._parse_partition_values(run_query(facts_sql).rows[0][0]), alias)}) }}
{% endmacro %}
