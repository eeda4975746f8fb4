{#- A full compaction: the compacted snapshot as one SELECT, for a full build and for the runs of a
    joinery_upsert model that compare it with the table (a new pull, new columns: diff.sql).

    It is shaped for a large snapshot and small deltas, and never shuffles the snapshot: one streaming
    pass keeps the snapshot rows that no delta row of their key beats (against a broadcast of the
    deltas' key and version columns, no ranking needed); the deltas are unioned and deduplicated
    alone (one window over all of them: deltas.sql), and a winner is written unless a snapshot row
    beats it, looked up among the few snapshot rows that some delta row does not beat (a second scan,
    of the snapshot's key and version columns alone). -#}

{% macro _compaction_full_build_sql(snapshot, deltas, identity_names, settings, defaults, removed) %}
    {#- compact when it does not run incrementally: the full compaction of the snapshot and every
        delta, with its winning deletes kept when joinery_upsert keeps tombstones. -#}
    {% set plan = joinery._compaction_plan([snapshot] + deltas, identity_names, settings, defaults, removed) %}
    {% if not execute %}
        {{ return('select 1 as joinery_unresolved') }}
    {% endif %}
    {#- The snapshot's newest loaded_at, read once, supersedes the older delta rows as a literal,
        instead of the SELECT's own scan of the snapshot for it. -#}
    {% set snapshot_newest = none %}
    {% set superseded_sql = joinery._compaction_superseded_sql(snapshot, plan, settings) %}
    {% set loaded_entry = joinery._plan_entry(plan, settings.loaded_at) if settings.loaded_at is not none else none %}
    {% if superseded_sql is not none and config.get('materialized') == 'joinery_upsert' %}
        {% set snapshot_newest = run_query('select ' ~ joinery._compaction_snapshot_newest_sql(snapshot,
            loaded_entry.sources[0], loaded_entry.type)).rows[0][0] %}
        {% set superseded_sql = joinery._typed_literal(snapshot_newest, loaded_entry.type)
            if snapshot_newest is not none else none %}
    {% endif %}
    {{ return(joinery._compaction_full_sql(snapshot, deltas, plan, settings, superseded_sql,
        with_deletes=settings.tombstones)) }}
{% endmacro %}


{% macro _compaction_superseded_sql(snapshot, plan, settings) %}
    {#- The snapshot's newest loaded_at as a scalar subquery: delta rows loaded before it are in the
        snapshot already (a full pull supersedes them). none without loaded_at in the snapshot. -#}
    {% set entry = joinery._plan_entry(plan, settings.loaded_at) if settings.loaded_at else none %}
    {% if entry is none or 0 not in entry.sources %}
        {{ return(none) }}
    {% endif %}
    {#- Qualified: unqualified, the name would resolve to the delta's column of the enclosing query
        were the snapshot ever to lack it. -#}
    {{ return('(select max(newest.' ~ joinery._quote_identifier(entry.sources[0]) ~ ') from ' ~ snapshot
        ~ ' as newest)') }}
{% endmacro %}


{% macro _compaction_snapshot_newest_sql(snapshot, column, type) %}
    {#- The snapshot's newest loaded_at as a scalar subquery of the text a stored watermark keeps
        (_watermark_text_sql: a timestamp with its UTC offset), NULL when it has none. -#}
    {{ return('(select ' ~ joinery._watermark_text_sql('cast(max(' ~ joinery._quote_identifier(column) ~ ') as '
        ~ type ~ ')', type) ~ ' from ' ~ snapshot ~ ')') }}
{% endmacro %}


{% macro _compaction_full_sql(snapshot, deltas, plan, settings, superseded_sql, watermark_sql=none,
        tombstones=none, with_deletes=false) %}
    {#- The compacted snapshot: a SELECT of the plan's columns, one row per key, deleted keys gone.
        `with_deletes`: a key whose winner is a delete keeps that row, flagged by the delete marker
        column (settings.marker), so that joinery_upsert records its tombstone. `tombstones`: see
        _compaction_delta_ctes. -#}
    {% set names = plan | map(attribute='name') | list %}
    {% if deltas | length == 0 %}
        {#- The snapshot alone, padded to the plan. -#}
        {% set snapshot_rows_sql %}(
    {{ joinery._compaction_snapshot_rows_sql(snapshot, plan) }}
) as snapshot_rows
        {%- endset %}
        {% set only_snapshot_sql %}
{{ joinery._compaction_outcome_sql(plan, settings, snapshot_rows_sql, with_deletes) }}
        {%- endset %}
        {{ return(only_snapshot_sql) }}
    {% endif %}
    {% set full_sql %}
with

{{ joinery._compaction_delta_ctes(deltas, plan, settings, superseded_sql, watermark_sql, tombstones=tombstones) }},

{{ joinery._compaction_snapshot_ctes_sql(snapshot, plan, settings) }},

delta_kept as (
    select {{ joinery._compaction_hint(settings, 'c') }}
        {{ joinery._quoted_column_list(names, 'w') }}
    from delta_winners as w
    left anti join snapshot_contenders as c
        on {{ joinery._compaction_key_match(settings, 'w', 'c') }}
        and not {{ joinery._compaction_version_wins(settings, 'w', 'c') }}
),

compacted as (
    select * from snapshot_kept
    union all
    select * from delta_kept
)

{{ joinery._compaction_outcome_sql(plan, settings, 'compacted', with_deletes) }}
    {%- endset %}
    {{ return(full_sql) }}
{% endmacro %}


{% macro _compaction_snapshot_rows_sql(snapshot, plan) %}
    {#- The snapshot's rows padded to the plan (it is relation 0): what snapshot_rows holds, and the
        whole input of a compaction without deltas. -#}
    {{ return('select\n        ' ~ joinery._padded_select_list(plan, 0) ~ '\n    from ' ~ snapshot) }}
{% endmacro %}


{% macro _compaction_snapshot_ctes_sql(snapshot, plan, settings) %}
    {#- The snapshot's side of a full compaction, after delta_rows: snapshot_rows, snapshot_kept (the
        rows no delta row of their key beats) and snapshot_contenders (the key and version columns of
        the rows some delta row of their key does not beat). -#}
    {% set version_names = settings.key + joinery._compaction_version_columns(settings) %}
    {% set snapshot_ctes_sql -%}
snapshot_rows as (
    {{ joinery._compaction_snapshot_rows_sql(snapshot, plan) }}
),

{#- One streaming pass over the snapshot: a row stays unless a delta row of its key beats it. The
    deltas' key and version columns, raw, are enough to tell (a key's winner beats every row that
    any of its delta rows beats), so this pass waits for no ranking. #}
snapshot_kept as (
    select {{ joinery._compaction_hint(settings, 'd') }} s.*
    from snapshot_rows as s
    left anti join delta_rows as d
        on {{ joinery._compaction_key_match(settings, 's', 'd') }}
        and {{ joinery._compaction_version_wins(settings, 'd', 's', older_first=true) }}
),

{#- The snapshot rows that some delta row of their key does not beat: every row that beats its key's
    winner is among them (usually none are, and Spark then drops the anti-join below). Parquet reads
    the key and version columns alone, probed against the broadcast delta rows as above. #}
snapshot_contenders as (
    select {{ joinery._compaction_hint(settings, 'd') }}
        {{ joinery._quoted_column_list(version_names, 's') }}
    from snapshot_rows as s
    left semi join delta_rows as d
        on {{ joinery._compaction_key_match(settings, 's', 'd') }}
        and not {{ joinery._compaction_version_wins(settings, 'd', 's', older_first=true) }}
)
    {%- endset %}
    {{ return(snapshot_ctes_sql) }}
{% endmacro %}


{% macro _compaction_outcome_sql(plan, settings, from_sql, with_deletes) %}
    {#- The final SELECT of a full compaction, of the plan's columns from `from_sql` (a CTE, or a
        subquery with its alias): the deleted rows left out, or with `with_deletes` kept and flagged
        by the delete marker column (settings.marker). The same with deltas and without. -#}
    {% set deleted_sql = joinery._compaction_deleted_sql(settings) %}
    {% set outcome = (', ' ~ deleted_sql ~ ' as ' ~ joinery._quote_identifier(settings.marker))
        if with_deletes else '\nwhere not ' ~ deleted_sql %}
    {% set outcome_sql -%}
select
    {{ joinery._quoted_column_list(plan | map(attribute='name') | list) }}
    {%- if with_deletes %}{{ outcome }}{% endif %}
from {{ from_sql }}
{%- if not with_deletes %}{{ outcome }}{% endif %}
    {%- endset %}
    {{ return(outcome_sql) }}
{% endmacro %}
