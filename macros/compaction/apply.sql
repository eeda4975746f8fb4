{#- The incremental run that applies the new delta rows to the table: with loaded_at, their winners
    alone, which joinery_upsert merges where they are newer than the table's rows (the run's plan
    names the version columns); without, every delta row against the table's rows for its key. -#}

{% macro _compaction_apply_deltas_sql(deltas, target, plan, settings, state, tombstones) %}
    {#- The changes of an incremental run on the delta path. With loaded_at: each key's newest version
        among the delta rows above the watermark that beats the key's tombstone, deletes included;
        the table is not read here, since the MERGE compares the versions itself (the plan's
        `versions`) and reads only the files of the key ranges they fall in. Otherwise
        _compaction_exact_apply_sql. -#}
    {% set delta_ctes = joinery._compaction_delta_ctes(deltas, plan, settings, state.snapshot_newest_sql,
        state.watermark_sql, tombstones=tombstones.live if tombstones else none) %}
    {% if not joinery._compaction_versioned(settings) %}
        {{ return(joinery._compaction_exact_apply_sql(delta_ctes, target, plan, settings, state)) }}
    {% endif %}
    {% set names = plan | map(attribute='name') | list %}
    {% set apply_sql %}
with

{{ delta_ctes }}

select
    {{ joinery._quoted_column_list(names) }},
    _joinery_is_delete as {{ joinery._quote_identifier(settings.marker) }}
from delta_winners
    {%- endset %}
    {{ return(apply_sql) }}
{% endmacro %}


{% macro _compaction_versioned(settings) %}
    {#- Whether the run's MERGE compares versions itself (a delta or iceberg model with loaded_at), so
        that its changes need not read the table: a parquet, orc or Hive rewrite reads the table
        anyway, and takes the exact changes. -#}
    {% set file_format = (config.get('file_format') or 'parquet') | lower %}
    {{ return(settings.loaded_at is not none and joinery._upsert_commit_path(file_format) == 'merge') }}
{% endmacro %}


{% macro _compaction_exact_apply_sql(delta_ctes, target, plan, settings, state) %}
    {#- The winners against the table's rows for their keys, yielding only what changes: on parquet,
        orc and Hive tables, and without loaded_at (every delta row read again each run). A version
        already in the table yields nothing, so applying a delta twice changes nothing. The table is
        read in the key ranges and partitions the new rows fall in (the probe's, _compaction_touched). -#}
    {% set names = plan | map(attribute='name') | list %}
    {% set touched = joinery._compaction_touched(delta_ctes, plan, settings, state, 't') %}
    {% set exact_sql %}
with

{{ delta_ctes }},

{#- One streaming pass over the table picks the rows of the keys the deltas touch: their keys as
    they are, so this pass does not wait for the ranking. #}
matched_rows as (
    select {{ joinery._compaction_hint(settings, 'd') }}
        t.*,
        true as _joinery_present
    from {{ target }} as t
    left semi join delta_rows as d
        on {{ joinery._compaction_key_match(settings, 't', 'd') }}
    {%- if touched %}
    where {{ touched | join(' and ') }}
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
    {%- endset %}
    {{ return(exact_sql) }}
{% endmacro %}


{% macro _compaction_touched(delta_ctes, plan, settings, state, alias) %}
    {#- Literal predicates on `alias` (the table) that keep the rows the new delta rows can meet: the
        key ranges and partitions they fall in, from the probe (incremental.sql); for a partitioned
        model without loaded_at, whose runs make no probe, the partitions from one pass over the delta
        rows. Spark prunes a literal predicate before listing files; the run-time (dynamic) pruning
        that the `=` on partition columns allows is dropped when Spark cannot reuse the broadcast,
        and the benchmark found it dropped here: every partition of the table was read. -#}
    {% set partition_columns = [] %}
    {% for column in settings.get('equal_columns', []) %}
        {% do partition_columns.append(joinery._plan_entry(plan, column)) %}
    {% endfor %}
    {% set found = [] %}
    {% if state.key_ranges is not none %}
        {% set key_type = joinery._plan_entry(plan, settings.key[0]).type %}
        {% do found.append(joinery._key_range_predicate(settings.key[0], key_type, state.key_ranges, alias)) %}
    {% endif %}
    {% if partition_columns and state.partitions is not none %}
        {% do found.append(joinery._partition_predicate(partition_columns,
            joinery._parse_partition_values(state.partitions), alias)) %}
    {% elif partition_columns %}
        {% set names = partition_columns | map(attribute='name') | list %}
        {% set facts_sql = 'select ' ~ joinery._partition_list_sql(names) ~ '\nfrom (\n'
            ~ joinery._partition_rollup_sql('with\n' ~ delta_ctes ~ '\nselect * from delta_rows', names,
                ['count(*) as joinery_rows']) ~ '\n)' %}
        {% do found.append(joinery._partition_predicate(partition_columns,
            joinery._parse_partition_values(run_query(facts_sql).rows[0][0]), alias)) %}
    {% endif %}
    {{ return(found) }}
{% endmacro %}
