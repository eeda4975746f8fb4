{#- A full compaction compared with the table, for the incremental runs that cannot just apply the
    new delta rows (a new pull, new columns): the rows to write and the delete markers, with or
    without the tombstones joinery_upsert keeps. -#}

{% macro _compaction_diff_sql(full_sql, plan, target, target_names, settings, tombstones=none, rederived=false) %}
    {#- The rows of a full compaction that the table does not hold as they are, plus a delete marker
        (settings.marker) for each key of the table the compaction no longer has. With tombstones
        (settings.tombstones: full_sql keeps its winning deletes), see _compaction_diff_deletes_sql. -#}
    {% if settings.tombstones %}
        {{ return(joinery._compaction_diff_deletes_sql(full_sql, plan, target, target_names, settings, tombstones,
            rederived)) }}
    {% endif %}
    {% set diff_sql %}
with

{{ joinery._compaction_diff_inputs_sql(full_sql, plan, target, target_names) }},

changed as (
    select
        c.*,
        false as {{ joinery._quote_identifier(settings.marker) }}
    from compacted as c
    left anti join target_rows as t
        on {{ joinery._compaction_same_row_sql(plan) }}
),

gone as (
    select
        t.*,
        true as {{ joinery._quote_identifier(settings.marker) }}
    from target_rows as t
    left anti join compacted as c
        on {{ joinery._compaction_key_match(settings, 't', 'c') }}
)

select * from changed
union all
select * from gone
    {%- endset %}
    {{ return(diff_sql) }}
{% endmacro %}


{% macro _compaction_diff_inputs_sql(full_sql, plan, target, target_names) %}
    {#- The CTEs both diffs start from: compacted (the full compaction) and target_rows (the table's
        rows as the plan's columns). -#}
    {% set inputs_sql -%}
compacted as (
    {{ full_sql | indent(4) }}
),

target_rows as (
    {{ joinery._compaction_target_rows_sql(plan, target, target_names) }}
)
    {%- endset %}
    {{ return(inputs_sql) }}
{% endmacro %}


{% macro _compaction_target_rows_sql(plan, target, target_names) %}
    {#- The table's rows as the plan's columns and types (a column the table lacks is NULL). -#}
    {% set target_select = [] %}
    {% for entry in plan %}
        {% set found = joinery._find_column(target_names, entry.name) %}
        {% do target_select.append(('cast(' ~ joinery._quote_identifier(found) ~ ' as ' ~ entry.type ~ ')'
            if found else 'cast(null as ' ~ entry.type ~ ')') ~ ' as ' ~ joinery._quote_identifier(entry.name)) %}
    {% endfor %}
    {{ return('select\n        ' ~ target_select | join(',\n        ') ~ '\n    from ' ~ target) }}
{% endmacro %}


{% macro _compaction_same_row_sql(plan) %}
    {#- The join condition of a compacted row `c` and a table row `t` equal in every column of the
        plan (NULLs equal, maps and variants compared by value: _same_value_sql). -#}
    {{ return(joinery._compaction_same_values(plan, 'c', 't') | join('\n        and ')) }}
{% endmacro %}


{% macro _compaction_diff_deletes_sql(full_sql, plan, target, target_names, settings, tombstones, rederived) %}
    {#- _compaction_diff_sql when joinery_upsert keeps tombstones, from a full compaction that keeps its
        winning deletes (flagged by settings.marker): its live rows that the table does not hold as
        they are; its deletes whose key the table holds or whose tombstone is not that version (a
        run applying a batch again records nothing); and a marker with NULL version columns, which
        clears the key's tombstone (_upsert_write_tombstones), for each key of the table, and with
        `rederived` (a new pull: the compaction derives every tombstone) each tombstone's key, that
        the compaction no longer has. -#}
    {% set marker = joinery._quote_identifier(settings.marker) %}
    {% set key_list = joinery._quoted_column_list(settings.key) %}
    {% set diff_sql %}
with

{{ joinery._compaction_diff_inputs_sql(full_sql, plan, target, target_names) }},

changed as (
    select c.*
    from compacted as c
    left anti join target_rows as t
        on {{ joinery._compaction_same_row_sql(plan) }}
    where not c.{{ marker }}
),

{{ joinery._compaction_recorded_deletes_sql(settings, tombstones) }},

gone as (
    {{ joinery._compaction_cleared_sql(plan, settings, 'k') | indent(4) }}
    from (
        select {{ key_list }} from target_rows
        {%- if tombstones and rederived %}
        union
        select {{ key_list }} from {{ tombstones.all }} as tombstones
        {%- endif %}
    ) as k
    left anti join compacted as c
        on {{ joinery._compaction_key_match(settings, 'k', 'c') }}
)

select * from changed
union all
select * from deleted
union all
select * from gone
    {%- endset %}
    {{ return(diff_sql) }}
{% endmacro %}


{% macro _compaction_recorded_deletes_sql(settings, tombstones) %}
    {#- The `deleted` CTE of _compaction_diff_deletes_sql: the compaction's winning deletes (flagged by
        settings.marker) whose key the table holds or whose tombstone is not that version, every one
        when the model has no tombstones yet; so a run applying a batch again records nothing. -#}
    {% set marker = joinery._quote_identifier(settings.marker) %}
    {% set same_version = ['true'] %}
    {% for column in joinery._compaction_version_columns(settings) %}
        {% set quoted = joinery._quote_identifier(column) %}
        {% do same_version.append('c.' ~ quoted ~ ' <=> b.' ~ quoted) %}
    {% endfor %}
    {% set key_list = joinery._quoted_column_list(settings.key) %}
    {% set deleted_sql -%}
deleted as (
    select c.*
    from compacted as c
    {%- if tombstones %}
    left join (select {{ key_list }}, true as _joinery_held from target_rows) as t
        on {{ joinery._compaction_key_match(settings, 'c', 't') }}
    left join (select *, true as _joinery_kept from {{ tombstones.all }} as tombstones) as b
        on {{ joinery._compaction_key_match(settings, 'c', 'b') }}
        and {{ same_version | join(' and ') }}
    {%- endif %}
    where c.{{ marker }}
    {%- if tombstones %}
        and (t._joinery_held or b._joinery_kept is null)
    {%- endif %}
)
    {%- endset %}
    {{ return(deleted_sql) }}
{% endmacro %}
