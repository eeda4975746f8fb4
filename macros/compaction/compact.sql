{#- compact: the Gobblin compaction (seed document 004) as one SELECT.

    Version order for a key, greatest wins: `updated_at` (NULL lowest), then `loaded_at` (arrival,
    NULL lowest), then source position (snapshot < delta 1 < ... < delta k), then the row's other
    columns (only exact duplicates are left, so any order gives the same result).

    Full compaction is shaped for a large snapshot and small deltas, and never shuffles the snapshot:
    one streaming pass keeps the snapshot rows that no delta row of their key beats (against a
    broadcast of the deltas' key and version columns, no ranking needed); the deltas are unioned and
    deduplicated alone (one window over all of them), and a winner is written unless a snapshot row
    beats it, looked up among the few snapshot rows that some delta row does not beat (a second scan,
    of the snapshot's key and version columns alone). -#}

{% macro compact(snapshot, deltas, key=none, updated_at=none, deleted=none, defaults={}, removed='keep',
        loaded_at=none, broadcast=true, incremental=none, tombstone_retention=none) %}
    {{ return(adapter.dispatch('compact', 'joinery')(snapshot, deltas, key, updated_at, deleted, defaults,
        removed, loaded_at, broadcast, incremental, tombstone_retention)) }}
{% endmacro %}


{% macro default__compact(snapshot, deltas, key=none, updated_at=none, deleted=none, defaults={}, removed='keep',
        loaded_at=none, broadcast=true, incremental=none, tombstone_retention=none) %}
    {% set snapshot_list = joinery.relation_list(snapshot, 'snapshot', 'compact') %}
    {% if snapshot_list | length != 1 %}
        {{ joinery.raise_argument_error('compact', 'snapshot', snapshot_list | map('string') | list,
            'expected one relation (ref(), source() or this)') }}
    {% endif %}
    {% set snapshot = snapshot_list[0] %}
    {% set deltas = joinery.relation_list(deltas, 'deltas', 'compact', allow_empty=true) %}
    {% set partition_by = config.get('partition_by') %}
    {% set partition_names = joinery.as_list(partition_by, 'partition_by', 'compact') if partition_by else [] %}
    {#- The partition columns are part of the identity: key defaults to unique_key and must match it. -#}
    {% set key_names = joinery.upsert_key_argument(key, 'compact', 'key', partition_names) %}
    {% for argument, value in [('updated_at', updated_at), ('loaded_at', loaded_at)] if value is not none %}
        {% do joinery.validate_identifier(value, argument, 'compact') %}
    {% endfor %}
    {% if deleted is not none and (deleted is not string or deleted | trim == '') %}
        {{ joinery.raise_argument_error('compact', 'deleted', deleted,
            'expected a boolean SQL expression over the columns, e.g. "op = \'D\'" or "is_deleted"') }}
    {% endif %}
    {% if broadcast not in [true, false] %}
        {{ joinery.raise_argument_error('compact', 'broadcast', broadcast, 'expected true or false') }}
    {% endif %}
    {% do joinery.compaction_check_retention(tombstone_retention, loaded_at) %}
    {% if not execute and loaded_at is not none %}
        {#- At parse time, where config() records: joinery_upsert keeps the tombstones of a model that
            reads deltas above a watermark, ordered by these columns (a `table` model ignores it). -#}
        {% do config.set('tombstones', [updated_at, loaded_at] | reject('none') | list) %}
    {% endif %}
    {% set identity_names = key_names | list %}
    {% for name in partition_names if name | lower not in key_names | map('lower') | list %}
        {% do identity_names.append(name) %}
    {% endfor %}
    {% if incremental is none %}
        {#- Only a joinery_upsert model has a previous compacted table to build on. -#}
        {% set incremental = config.get('materialized') == 'joinery_upsert' and joinery.is_incremental() %}
    {% endif %}

    {#- A joinery_upsert model reads only delta rows above its watermark, so a delta row with a NULL
        loaded_at would be in a full build and never in an incremental run: every run of one stops
        on such a row instead. -#}
    {% set settings = {'key': identity_names, 'updated_at': updated_at, 'loaded_at': loaded_at,
        'deleted': joinery.sql_expression(deleted), 'broadcast': broadcast,
        'marker': joinery.upsert_marker_column(),
        'require_loaded_at': loaded_at is not none
            and (incremental or config.get('materialized') == 'joinery_upsert'),
        'tombstones': loaded_at is not none and config.get('materialized') == 'joinery_upsert',
        'tombstone_retention': tombstone_retention} %}
    {% if not incremental %}
        {% set plan = joinery.compaction_plan([snapshot] + deltas, identity_names, settings, defaults, removed) %}
        {% if not execute %}
            {{ return('select 1 as joinery_unresolved') }}
        {% endif %}
        {#- The snapshot's newest loaded_at, read once, supersedes the older delta rows as a literal,
            instead of the SELECT's own scan of the snapshot for it. -#}
        {% set snapshot_newest = none %}
        {% set superseded_sql = joinery.compaction_superseded_sql(snapshot, plan, settings) %}
        {% set loaded_entry = joinery.plan_entry(plan, loaded_at) if loaded_at is not none else none %}
        {% if superseded_sql is not none and config.get('materialized') == 'joinery_upsert' %}
            {% set snapshot_newest = run_query('select ' ~ joinery.compaction_snapshot_newest_sql(snapshot,
                loaded_entry.sources[0], loaded_entry.type)).rows[0][0] %}
            {% set superseded_sql = joinery.typed_literal(snapshot_newest, loaded_entry.type)
                if snapshot_newest is not none else none %}
        {% endif %}
        {{ return(joinery.compaction_full_sql(snapshot, deltas, plan, settings, superseded_sql,
            with_deletes=settings.tombstones)) }}
    {% endif %}
    {% do settings.update({'equal_columns': joinery.as_list(partition_by, 'partition_by', 'compact')
        if partition_by else []}) %}
    {{ return(joinery.compaction_incremental_sql(snapshot, deltas, this, identity_names, settings,
        defaults, removed)) }}
{% endmacro %}


{% macro compaction_plan(relations, identity_names, settings, defaults, removed) %}
    {#- The padded column plan plus the compaction's own checks: the key, updated_at and loaded_at
        must be output columns, and a key column must exist in every input (a key cannot be padded). -#}
    {% set plan = joinery.union_column_plan(relations, defaults, removed, 'compact') %}
    {% if not execute %}
        {{ return(plan) }}
    {% endif %}
    {% set names = plan | map(attribute='name') | list %}
    {% do joinery.upsert_check_marker_clash(names, 'compact') %}
    {% set resolved = {'key': []} %}
    {% for name in identity_names %}
        {% set column = joinery.find_column(names, name) %}
        {% if column is none %}
            {{ joinery.raise_argument_error('compact', 'key', name, 'no such column; columns are ' ~ tojson(names)) }}
        {% endif %}
        {% for entry in plan if entry.name == column %}
            {% for i in range(relations | length) if i not in entry.sources %}
                {{ joinery.raise_argument_error('compact', 'key', name,
                    'every key column must be a column of every input; missing from ' ~ relations[i]) }}
            {% endfor %}
        {% endfor %}
        {% do resolved.key.append(column) %}
    {% endfor %}
    {% for argument in ['updated_at', 'loaded_at'] if settings[argument] is not none %}
        {% set column = joinery.find_column(names, settings[argument]) %}
        {% if column is none %}
            {{ joinery.raise_argument_error('compact', argument, settings[argument],
                'no such column; columns are ' ~ tojson(names)) }}
        {% endif %}
        {% do resolved.update({argument: column}) %}
    {% endfor %}
    {% if settings.loaded_at is not none %}
        {% set entry = joinery.plan_entry(plan, resolved.loaded_at) %}
        {% for i in range(1, relations | length) if i not in entry.sources %}
            {{ joinery.raise_argument_error('compact', 'loaded_at', settings.loaded_at,
                'loaded_at must be a column of every delta; missing from ' ~ relations[i]) }}
        {% endfor %}
    {% endif %}
    {% do settings.update(resolved) %}
    {{ return(plan) }}
{% endmacro %}


{% macro plan_entry(plan, name) %}
    {% for entry in plan if entry.name | lower == name | lower %}
        {{ return(entry) }}
    {% endfor %}
    {{ return(none) }}
{% endmacro %}


{% macro compaction_version_wins(settings, newer, older) %}
    {#- True when the version in alias `newer` beats the one in `older` (same key): greater
        updated_at, then greater loaded_at (NULLs lowest); a full tie goes to `newer`, the later source. -#}
    {% set condition = namespace(sql='true') %}
    {% for column in [settings.loaded_at, settings.updated_at] if column is not none %}
        {% set n = newer ~ '.' ~ joinery.quote_identifier(column) %}
        {% set o = older ~ '.' ~ joinery.quote_identifier(column) %}
        {% set condition.sql = '(coalesce(' ~ n ~ ' > ' ~ o ~ ', false) or (' ~ n ~ ' is not null and ' ~ o
            ~ ' is null) or (' ~ n ~ ' <=> ' ~ o ~ ' and ' ~ condition.sql ~ '))' %}
    {% endfor %}
    {{ return(condition.sql) }}
{% endmacro %}


{% macro compaction_key_match(settings, left, right) %}
    {#- Null-safe, except on the partition columns of an incremental run: a joinery_upsert table
        never holds a NULL partition value, and `=` lets Spark use the key for partition pruning
        (dynamic pruning, when it can reuse the broadcast; compaction_new_rows adds the
        literal predicate that prunes in every case). -#}
    {{ return(joinery.key_match(settings.key, left, right, equal_columns=settings.get('equal_columns', []))) }}
{% endmacro %}


{% macro compaction_hint(settings, alias) %}
    {{ return('/*+ broadcast(' ~ alias ~ ') */' if settings.broadcast else '') }}
{% endmacro %}


{% macro compaction_delta_ctes(deltas, plan, settings, superseded_sql, watermark_sql, first_index=1,
        tombstones=none) %}
    {#- delta_rows: every delta padded to the plan, tagged with its source position (1..k), without
        the rows a full snapshot supersedes (loaded before the snapshot's newest loaded_at) and, on an
        incremental run, without the rows at or below the watermark; delta_winners: the newest version
        per key among them (one window over all deltas together). `tombstones`: a relation of deleted
        keys with their deleting version (compaction_tombstones_sql); a delta row that does not beat
        its key's tombstone loses to that delete, so it does not compete. -#}
    {% set loaded_entry = joinery.plan_entry(plan, settings.loaded_at) if settings.loaded_at else none %}
    {% set selects = [] %}
    {% for delta in deltas %}
        {% set delta_index = loop.index %}
        {% set plan_index = first_index + loop.index0 %}
        {% set filters = [] %}
        {% if loaded_entry is not none %}
            {% set loaded_sql = joinery.quote_identifier(loaded_entry.sources[plan_index]) %}
            {% if superseded_sql is not none %}
                {% do filters.append('not coalesce(' ~ loaded_sql ~ ' < ' ~ superseded_sql ~ ', false)') %}
            {% endif %}
            {% if watermark_sql is not none %}
                {#- A NULL loaded_at passes, so that the check below stops the run: filtered out by
                    `>`, the row would be skipped silently by every incremental run. -#}
                {% do filters.append('(' ~ loaded_sql ~ ' > ' ~ watermark_sql ~ ' or ' ~ loaded_sql ~ ' is null)') %}
            {% endif %}
            {% if settings.get('require_loaded_at') %}
                {% do filters.append(joinery.fail_when_sql(loaded_sql ~ ' is null', joinery.sql_string(
                    'joinery.compact: a row of ' ~ delta ~ ' has a NULL loaded_at (' ~ loaded_entry.sources[plan_index]
                    ~ '); an incremental run reads only rows loaded after its watermark, so it could never read '
                    ~ 'this one: give every delta row a loaded_at'))) %}
            {% endif %}
        {% endif %}
        {% set select_sql %}
        select
            {{ joinery.padded_select_list(plan, plan_index) }},
            {{ delta_index }} as _joinery_source
        from {{ delta }}
        {%- if filters %}
        where {{ filters | join('\n            and ') }}
        {%- endif %}
        {%- endset %}
        {% do selects.append(select_sql) %}
    {% endfor %}
    {% set ordering = [] %}
    {% for column in [settings.updated_at, settings.loaded_at] if column is not none %}
        {% do ordering.append(joinery.quote_identifier(column) ~ ' desc nulls last') %}
    {% endfor %}
    {% do ordering.append('_joinery_source desc') %}
    {% for entry in plan if entry.name not in settings.key + [settings.updated_at, settings.loaded_at] %}
        {% do ordering.append(joinery.comparable_sql(joinery.quote_identifier(entry.name), entry.type) ~ ' desc nulls last') %}
    {% endfor %}
    {% set ctes_sql %}
delta_rows as (
    {{ selects | join('\n        union all\n') }}
),

{%- if tombstones is not none %}

delta_candidates as (
    select {{ joinery.compaction_hint(settings, 'b') }}
        d.*
    from delta_rows as d
    left anti join {{ tombstones }} as b
        on {{ joinery.compaction_key_match(settings, 'd', 'b') }}
        and not {{ joinery.compaction_version_wins(settings, 'd', 'b') }}
),
{%- endif %}

delta_ranked as (
    select
        *,
        row_number() over (
            partition by {{ joinery.quoted_column_list(settings.key) }}
            order by {{ ordering | join(', ') }}
        ) as _joinery_row_number
    from {{ 'delta_candidates' if tombstones is not none else 'delta_rows' }}
),

delta_winners as (
    select
        {{ joinery.quoted_column_list(plan | map(attribute='name') | list) }},
        {{ joinery.compaction_deleted_sql(settings) }} as _joinery_is_delete
    from delta_ranked
    where _joinery_row_number = 1
)
    {%- endset %}
    {{ return(ctes_sql) }}
{% endmacro %}


{% macro compaction_deleted_sql(settings) %}
    {{ return('coalesce((' ~ settings.deleted ~ '), false)' if settings.deleted is not none else 'false') }}
{% endmacro %}


{% macro compaction_superseded_sql(snapshot, plan, settings) %}
    {#- The snapshot's newest loaded_at as a scalar subquery: delta rows loaded before it are in the
        snapshot already (a full pull supersedes them). none without loaded_at in the snapshot. -#}
    {% set entry = joinery.plan_entry(plan, settings.loaded_at) if settings.loaded_at else none %}
    {% if entry is none or 0 not in entry.sources %}
        {{ return(none) }}
    {% endif %}
    {{ return('(select max(' ~ joinery.quote_identifier(entry.sources[0]) ~ ') from ' ~ snapshot ~ ')') }}
{% endmacro %}


{% macro compaction_full_sql(snapshot, deltas, plan, settings, superseded_sql, watermark_sql=none,
        tombstones=none, with_deletes=false) %}
    {#- The compacted snapshot: a SELECT of the plan's columns, one row per key, deleted keys gone.
        `with_deletes`: a key whose winner is a delete keeps that row, flagged by the delete marker
        column (settings.marker), so that joinery_upsert records its tombstone. `tombstones`: see
        compaction_delta_ctes. -#}
    {% set names = plan | map(attribute='name') | list %}
    {% set deleted_sql = joinery.compaction_deleted_sql(settings) %}
    {% set outcome = (', ' ~ deleted_sql ~ ' as ' ~ joinery.quote_identifier(settings.marker))
        if with_deletes else '\nwhere not ' ~ deleted_sql %}
    {% if deltas | length == 0 %}
        {% set only_snapshot_sql %}
select
    {{ joinery.quoted_column_list(names) }}
    {%- if with_deletes %}{{ outcome }}{% endif %}
from (
    select
        {{ joinery.padded_select_list(plan, 0) }}
    from {{ snapshot }}
) as snapshot_rows
{%- if not with_deletes %}{{ outcome }}{% endif %}
        {%- endset %}
        {{ return(only_snapshot_sql) }}
    {% endif %}
    {% set version_names = [] %}
    {% for column in settings.key + [settings.updated_at, settings.loaded_at] if column is not none %}
        {% do version_names.append(column) %}
    {% endfor %}
    {% set full_sql %}
with

{{ joinery.compaction_delta_ctes(deltas, plan, settings, superseded_sql, watermark_sql, tombstones=tombstones) }},

snapshot_rows as (
    select
        {{ joinery.padded_select_list(plan, 0) }}
    from {{ snapshot }}
),

{#- One streaming pass over the snapshot: a row stays unless a delta row of its key beats it. The
    deltas' key and version columns, raw, are enough to tell (a key's winner beats every row that
    any of its delta rows beats), so this pass waits for no ranking. #}
snapshot_kept as (
    select {{ joinery.compaction_hint(settings, 'd') }} s.*
    from snapshot_rows as s
    left anti join delta_rows as d
        on {{ joinery.compaction_key_match(settings, 's', 'd') }}
        and {{ joinery.compaction_version_wins(settings, 'd', 's') }}
),

{#- The snapshot rows that some delta row of their key does not beat: every row that beats its key's
    winner is among them (usually none are, and Spark then drops the anti-join below). Parquet reads
    the key and version columns alone, probed against the broadcast delta rows as above. #}
snapshot_contenders as (
    select {{ joinery.compaction_hint(settings, 'd') }}
        {{ joinery.quoted_column_list(version_names, 's') }}
    from snapshot_rows as s
    left semi join delta_rows as d
        on {{ joinery.compaction_key_match(settings, 's', 'd') }}
        and not {{ joinery.compaction_version_wins(settings, 'd', 's') }}
),

delta_kept as (
    select {{ joinery.compaction_hint(settings, 'c') }}
        {{ joinery.quoted_column_list(names, 'w') }}
    from delta_winners as w
    left anti join snapshot_contenders as c
        on {{ joinery.compaction_key_match(settings, 'w', 'c') }}
        and not {{ joinery.compaction_version_wins(settings, 'w', 'c') }}
),

compacted as (
    select * from snapshot_kept
    union all
    select * from delta_kept
)

select
    {{ joinery.quoted_column_list(names) }}
    {%- if with_deletes %}{{ outcome }}{% endif %}
from compacted
{%- if not with_deletes %}{{ outcome }}{% endif %}
    {%- endset %}
    {{ return(full_sql) }}
{% endmacro %}


{% macro compaction_incremental_sql(snapshot, deltas, target, identity_names, settings, defaults, removed) %}
    {#- An incremental run of a joinery_upsert model: the changed rows and delete markers
        (under the model's deleted_column) that turn the previous compacted table into the new one.
        - Usually: the new delta rows (loaded_at above the table's newest loaded_at; without
          loaded_at, all of them) against the table's rows for their keys. A version already in the
          table yields nothing, so applying a delta twice changes nothing.
        - A new full snapshot (its newest loaded_at above the table's), or new columns from a delta:
          the full compaction, compared with the table row by row (rows that differ, plus delete
          markers for keys it no longer has). -#}
    {% set plan = joinery.compaction_plan([target] + deltas, identity_names, settings, defaults, removed) %}
    {% if not execute %}
        {{ return('select 1 as joinery_unresolved') }}
    {% endif %}
    {% set target_columns = joinery.columns_of(target) %}
    {% set target_names = target_columns | map(attribute='name') | list %}
    {% for column in target_names if joinery.plan_entry(plan, column) is none %}
        {{ joinery.raise_argument_error('compact', 'removed', removed,
            'the newest delta no longer has column ' ~ column ~ ' of ' ~ target ~ ', and Spark cannot drop a column '
            ~ 'of a parquet table in place: run this model once with --full-refresh to drop it') }}
    {% endfor %}
    {% set reshaped = namespace(value=false) %}
    {% for entry in plan if 0 not in entry.sources or entry.source_types[0] != entry.type %}
        {% set reshaped.value = true %}
    {% endfor %}

    {% set state = joinery.compaction_snapshot_state(snapshot, target, plan, settings) %}

    {#- The companion of deleted keys (joinery_upsert keeps it for this model: upsert_tombstones_relation);
        none before the first build that kept one. Past tombstone_retention, a tombstone counts as none. -#}
    {% set tombstones = joinery.compaction_tombstones_sql(target, plan, settings, state.watermark_sql) %}
    {% if state.rebase %}
        {#- A new pull supersedes older deltas, and their deletes with them: every tombstone is derived again. -#}
        {% set full_plan = joinery.compaction_plan([snapshot] + deltas, identity_names, settings, defaults, removed) %}
        {% set full_sql = joinery.compaction_full_sql(snapshot, deltas, full_plan, settings, state.snapshot_newest_sql,
            with_deletes=settings.tombstones) %}
        {{ return(joinery.compaction_diff_sql(full_sql, full_plan, target, target_names, settings, tombstones,
            rederived=true)) }}
    {% endif %}
    {% if reshaped.value %}
        {#- The table plays the snapshot; only the new delta rows are read. -#}
        {% set full_sql = joinery.compaction_full_sql(target, deltas, plan, settings, state.snapshot_newest_sql,
            state.watermark_sql, tombstones=tombstones.live if tombstones else none, with_deletes=settings.tombstones) %}
        {{ return(joinery.compaction_diff_sql(full_sql, plan, target, target_names, settings, tombstones)) }}
    {% endif %}
    {{ return(joinery.compaction_apply_deltas_sql(deltas, target, plan, settings, state, tombstones)) }}
{% endmacro %}


{% macro compaction_snapshot_state(snapshot, target, plan, settings) %}
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
    {% set loaded_entry = joinery.plan_entry(plan, settings.loaded_at) %}
    {% set snapshot_loaded = joinery.find_column(joinery.column_names(snapshot), settings.loaded_at) %}
    {% set probe_sql %}
        select w, s, cast(s as {{ loaded_entry.type }}) > cast(w as {{ loaded_entry.type }})
        from (
            select
            (select cast(max({{ joinery.quote_identifier(settings.loaded_at) }}) as string) from {{ target }}) as w,
            {% if snapshot_loaded %}
            {{ joinery.compaction_snapshot_newest_sql(snapshot, snapshot_loaded, loaded_entry.type) }} as s
            {% else %}
            cast(null as string) as s
            {% endif %}
        )
    {% endset %}
    {% set probe = run_query(probe_sql).rows[0] %}
    {% if probe[0] is not none %}
        {% do state.update({'watermark_sql': joinery.typed_literal(probe[0], loaded_entry.type)}) %}
    {% endif %}
    {% if probe[1] is not none %}
        {% do state.update({'snapshot_newest_sql': joinery.typed_literal(probe[1], loaded_entry.type),
            'rebase': probe[0] is none or probe[2]}) %}
    {% endif %}
    {% do state.update({'watermark': probe[0], 'snapshot_newest': probe[1]}) %}
    {{ return(state) }}
{% endmacro %}


{% macro compaction_apply_deltas_sql(deltas, target, plan, settings, state, tombstones) %}
    {#- The usual incremental run: the new delta rows against the table's rows for their keys. A
        version already in the table yields nothing, so applying a delta twice changes nothing. -#}
    {% set delta_ctes = joinery.compaction_delta_ctes(deltas, plan, settings, state.snapshot_newest_sql,
        state.watermark_sql, tombstones=tombstones.live if tombstones else none) %}
    {% set new_rows = joinery.compaction_new_rows(delta_ctes, plan, settings, 't') %}
    {% set touched_sql = new_rows.touched %}
    {% set names = plan | map(attribute='name') | list %}
    {% set identical = [] %}
    {% for entry in plan %}
        {% do identical.append(joinery.same_value_sql('w.' ~ joinery.quote_identifier(entry.name),
            'm.' ~ joinery.quote_identifier(entry.name), entry.type)) %}
    {% endfor %}
    {% set incremental_sql %}
with

{{ delta_ctes }},

{#- One streaming pass over the table (its touched partitions) picks the rows of the keys the new
    deltas touch: their keys as they are, so this pass does not wait for the ranking. #}
matched_rows as (
    select {{ joinery.compaction_hint(settings, 'd') }}
        t.*,
        true as _joinery_present
    from {{ target }} as t
    left semi join delta_rows as d
        on {{ joinery.compaction_key_match(settings, 't', 'd') }}
    {%- if touched_sql is not none %}
    where {{ touched_sql }}
    {%- endif %}
),

versions as (
    select {{ joinery.compaction_hint(settings, 'm') }}
        w.*,
        coalesce(m._joinery_present, false) as _joinery_present,
        {{ joinery.compaction_version_wins(settings, 'w', 'm') }} as _joinery_wins,
        {{ identical | join(' and ') }} as _joinery_identical
    from delta_winners as w
    left join matched_rows as m
        on {{ joinery.compaction_key_match(settings, 'w', 'm') }}
)

select
    {{ joinery.quoted_column_list(names) }},
    _joinery_is_delete as {{ joinery.quote_identifier(settings.marker) }}
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

{{ joinery.compaction_purge_sql(tombstones.expired, plan, settings) }}
    {%- endif %}
    {%- endset %}
    {{ return(incremental_sql) }}
{% endmacro %}


{% macro compaction_new_rows(delta_ctes, plan, settings, alias) %}
    {#- On a partitioned model, a literal predicate on `alias` that keeps the table's partitions an
        incremental run's new delta rows fall in (`false` for none), from one pass over them; none
        unpartitioned (no statement). Spark prunes a literal predicate before listing files; the
        run-time (dynamic) pruning that the `=` on partition columns allows is dropped when Spark
        cannot reuse the broadcast, and the benchmark found it dropped here: every partition of the
        table was read. -#}
    {% set partition_columns = [] %}
    {% for column in settings.get('equal_columns', []) %}
        {% do partition_columns.append(joinery.plan_entry(plan, column)) %}
    {% endfor %}
    {% if not partition_columns %}
        {{ return({'touched': none}) }}
    {% endif %}
    {% set rows_sql = 'with\n' ~ delta_ctes ~ '\nselect * from delta_rows' %}
    {% set names = partition_columns | map(attribute='name') | list %}
    {% set facts_sql = 'select ' ~ joinery.partition_list_sql(names) ~ '\nfrom (\n'
        ~ joinery.partition_rollup_sql(rows_sql, names, ['count(*) as joinery_rows']) ~ '\n)' %}
    {{ return({'touched': joinery.partition_predicate(partition_columns,
        joinery.parse_partition_values(run_query(facts_sql).rows[0][0]), alias)}) }}
{% endmacro %}


{% macro compaction_snapshot_newest_sql(snapshot, column, type) %}
    {#- The snapshot's newest loaded_at as a scalar subquery of the text a stored watermark keeps
        (watermark_text_sql: a timestamp with its UTC offset), NULL when it has none. -#}
    {{ return('(select ' ~ joinery.watermark_text_sql('cast(max(' ~ joinery.quote_identifier(column) ~ ') as '
        ~ type ~ ')', type) ~ ' from ' ~ snapshot ~ ')') }}
{% endmacro %}


{% macro compaction_diff_sql(full_sql, plan, target, target_names, settings, tombstones=none, rederived=false) %}
    {#- The rows of a full compaction that the table does not hold as they are, plus a delete marker
        (settings.marker) for each key of the table the compaction no longer has. With tombstones
        (settings.tombstones: full_sql keeps its winning deletes), see compaction_diff_deletes_sql. -#}
    {% if settings.tombstones %}
        {{ return(joinery.compaction_diff_deletes_sql(full_sql, plan, target, target_names, settings, tombstones,
            rederived)) }}
    {% endif %}
    {% set diff_sql %}
with

compacted as (
    {{ full_sql | indent(4) }}
),

target_rows as (
    {{ joinery.compaction_target_rows_sql(plan, target, target_names) }}
),

changed as (
    select
        c.*,
        false as {{ joinery.quote_identifier(settings.marker) }}
    from compacted as c
    left anti join target_rows as t
        on {{ joinery.compaction_same_row_sql(plan) }}
),

gone as (
    select
        t.*,
        true as {{ joinery.quote_identifier(settings.marker) }}
    from target_rows as t
    left anti join compacted as c
        on {{ joinery.compaction_key_match(settings, 't', 'c') }}
)

select * from changed
union all
select * from gone
    {%- endset %}
    {{ return(diff_sql) }}
{% endmacro %}


{% macro compaction_target_rows_sql(plan, target, target_names) %}
    {#- The table's rows as the plan's columns and types (a column the table lacks is NULL). -#}
    {% set target_select = [] %}
    {% for entry in plan %}
        {% set found = joinery.find_column(target_names, entry.name) %}
        {% do target_select.append(('cast(' ~ joinery.quote_identifier(found) ~ ' as ' ~ entry.type ~ ')'
            if found else 'cast(null as ' ~ entry.type ~ ')') ~ ' as ' ~ joinery.quote_identifier(entry.name)) %}
    {% endfor %}
    {{ return('select\n        ' ~ target_select | join(',\n        ') ~ '\n    from ' ~ target) }}
{% endmacro %}


{% macro compaction_same_row_sql(plan) %}
    {#- The join condition of a compacted row `c` and a table row `t` equal in every column of the
        plan (NULLs equal, maps and variants compared by value: same_value_sql). -#}
    {% set same_row = [] %}
    {% for entry in plan %}
        {% do same_row.append(joinery.same_value_sql('c.' ~ joinery.quote_identifier(entry.name),
            't.' ~ joinery.quote_identifier(entry.name), entry.type)) %}
    {% endfor %}
    {{ return(same_row | join('\n        and ')) }}
{% endmacro %}


{% macro compaction_diff_deletes_sql(full_sql, plan, target, target_names, settings, tombstones, rederived) %}
    {#- compaction_diff_sql when joinery_upsert keeps tombstones, from a full compaction that keeps its
        winning deletes (flagged by settings.marker): its live rows that the table does not hold as
        they are; its deletes whose key the table holds or whose tombstone is not that version (a
        run applying a batch again records nothing); and a marker with NULL version columns, which
        clears the key's tombstone (upsert_write_tombstones), for each key of the table, and with
        `rederived` (a new pull: the compaction derives every tombstone) each tombstone's key, that
        the compaction no longer has. -#}
    {% set marker = joinery.quote_identifier(settings.marker) %}
    {% set same_version = ['true'] %}
    {% for column in [settings.updated_at, settings.loaded_at] if column is not none %}
        {% set quoted = joinery.quote_identifier(column) %}
        {% do same_version.append('c.' ~ quoted ~ ' <=> b.' ~ quoted) %}
    {% endfor %}
    {% set key_list = joinery.quoted_column_list(settings.key) %}
    {% set diff_sql %}
with

compacted as (
    {{ full_sql | indent(4) }}
),

target_rows as (
    {{ joinery.compaction_target_rows_sql(plan, target, target_names) }}
),

changed as (
    select c.*
    from compacted as c
    left anti join target_rows as t
        on {{ joinery.compaction_same_row_sql(plan) }}
    where not c.{{ marker }}
),

deleted as (
    select c.*
    from compacted as c
    {%- if tombstones %}
    left join (select {{ key_list }}, true as _joinery_held from target_rows) as t
        on {{ joinery.compaction_key_match(settings, 'c', 't') }}
    left join (select *, true as _joinery_kept from {{ tombstones.all }}) as b
        on {{ joinery.compaction_key_match(settings, 'c', 'b') }}
        and {{ same_version | join(' and ') }}
    {%- endif %}
    where c.{{ marker }}
    {%- if tombstones %}
        and (t._joinery_held or b._joinery_kept is null)
    {%- endif %}
),

gone as (
    {{ joinery.compaction_cleared_sql(plan, settings, 'k') | indent(4) }}
    from (
        select {{ key_list }} from target_rows
        {%- if tombstones and rederived %}
        union
        select {{ key_list }} from {{ tombstones.all }}
        {%- endif %}
    ) as k
    left anti join compacted as c
        on {{ joinery.compaction_key_match(settings, 'k', 'c') }}
)

select * from changed
union all
select * from deleted
union all
select * from gone
    {%- endset %}
    {{ return(diff_sql) }}
{% endmacro %}


{% macro compaction_cleared_sql(plan, settings, alias) %}
    {#- The SELECT list of a delete marker whose version columns are NULL, for the key in `alias`:
        joinery_upsert deletes the key from the table, and clears its tombstone. -#}
    {% set columns = [] %}
    {% for entry in plan %}
        {% set value = alias ~ '.' ~ joinery.quote_identifier(entry.name) if entry.name in settings.key else 'null' %}
        {% do columns.append('cast(' ~ value ~ ' as ' ~ entry.type ~ ') as ' ~ joinery.quote_identifier(entry.name)) %}
    {% endfor %}
    {{ return('select\n    ' ~ columns | join(',\n    ') ~ ',\n    true as '
        ~ joinery.quote_identifier(settings.marker)) }}
{% endmacro %}


{% macro compaction_tombstones_sql(target, plan, settings, watermark_sql) %}
    {#- The model's tombstones as subqueries of its key and version columns: {'all', 'live' (those
        tombstone_retention keeps), 'expired' (the others, none without a retention or watermark)};
        none when the model keeps no tombstones or has no companion yet. A tombstone expires when its
        loaded_at is older than the watermark the run starts from minus the retention. -#}
    {% if not settings.tombstones %}
        {{ return(none) }}
    {% endif %}
    {% set companion = joinery.upsert_tombstones_relation(target) %}
    {% if adapter.get_relation(database=companion.database, schema=companion.schema,
        identifier=companion.identifier) is none %}
        {{ return(none) }}
    {% endif %}
    {% set columns = settings.key + ([settings.updated_at, settings.loaded_at] | reject('none') | list) %}
    {% set all_sql = '(select ' ~ joinery.quoted_column_list(columns) ~ ' from ' ~ companion ~ ')' %}
    {% set retention = settings.tombstone_retention %}
    {% if retention is none or watermark_sql is none %}
        {{ return({'all': all_sql, 'live': all_sql, 'expired': none}) }}
    {% endif %}
    {% set expired = 'coalesce(' ~ joinery.quote_identifier(settings.loaded_at) ~ ' < ' ~ watermark_sql ~ ' - '
        ~ joinery.compaction_retention_sql(retention, joinery.plan_entry(plan, settings.loaded_at).type) ~ ', false)' %}
    {{ return({'all': all_sql, 'live': all_sql[:-1] ~ ' where not ' ~ expired ~ ')',
        'expired': all_sql[:-1] ~ ' where ' ~ expired ~ ')'}) }}
{% endmacro %}


{% macro compaction_purge_sql(expired, plan, settings) %}
    {#- Delete markers with NULL version columns (compaction_cleared_sql) for the expired tombstones
        of keys no new delta row touches: joinery_upsert drops those tombstones. -#}
    {% set purge_sql %}
{{ joinery.compaction_cleared_sql(plan, settings, 'b') }}
from {{ expired }} as b
left anti join delta_rows as d
    on {{ joinery.compaction_key_match(settings, 'b', 'd') }}
    {%- endset %}
    {{ return(purge_sql) }}
{% endmacro %}


{% macro compaction_check_retention(retention, loaded_at) %}
    {#- tombstone_retention: none (keep every tombstone), a number (a numeric loaded_at) or an
        interval of whole units ('30 days'; a timestamp or date loaded_at). Tombstones exist only in
        a model that reads deltas above a watermark, so it needs loaded_at. -#}
    {% if retention is none %}
        {{ return(none) }}
    {% endif %}
    {% set allowed = "expected a number (a numeric loaded_at) or an interval of whole units such as '30 days' "
        ~ "or '12 hours' (second, minute, hour, day or week; a timestamp or date loaded_at), or none to keep every "
        ~ 'tombstone' %}
    {% if retention is string %}
        {% if not modules.re.match('^\\s*[0-9]+\\s*(second|minute|hour|day|week)s?\\s*$', retention, modules.re.I) %}
            {{ joinery.raise_argument_error('compact', 'tombstone_retention', retention, allowed) }}
        {% endif %}
    {% elif retention is boolean or retention is not number or retention < 0 %}
        {{ joinery.raise_argument_error('compact', 'tombstone_retention', retention, allowed) }}
    {% endif %}
    {% if loaded_at is none %}
        {{ joinery.raise_argument_error('compact', 'tombstone_retention', retention, 'needs loaded_at: tombstones '
            ~ 'are kept by a joinery_upsert model that reads deltas above a loaded_at watermark') }}
    {% endif %}
{% endmacro %}


{% macro compaction_retention_sql(retention, type) %}
    {#- tombstone_retention as the SQL subtracted from a loaded_at of `type`: an interval
        (`interval 30 day`) or a number; a kind that does not fit the type is an error. -#}
    {% set numeric = type | lower in ['tinyint', 'smallint', 'int', 'bigint', 'float', 'double']
        or (type | lower).startswith('decimal') %}
    {% if retention is string and not numeric %}
        {% set parts = modules.re.match('^\\s*([0-9]+)\\s*([a-z]+?)s?\\s*$', retention | lower) %}
        {{ return('interval ' ~ parts.group(1) ~ ' ' ~ parts.group(2)) }}
    {% elif retention is number and numeric %}
        {{ return(retention | string) }}
    {% endif %}
    {{ joinery.raise_argument_error('compact', 'tombstone_retention', retention, 'loaded_at is of type ' ~ type
        ~ (': expected a number' if numeric else ": expected an interval such as '30 days'")) }}
{% endmacro %}
