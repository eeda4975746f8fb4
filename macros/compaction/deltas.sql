{#- The deltas' side of every compaction: their rows padded to the plan and filtered (delta_rows),
    and the newest version of each key among them (delta_winners). -#}

{% macro _compaction_delta_ctes(deltas, plan, settings, superseded_sql, watermark_sql, first_index=1,
        tombstones=none) %}
    {#- delta_rows: every delta padded to the plan, tagged with its source position (1..k), without
        the rows a full snapshot supersedes (loaded before the snapshot's newest loaded_at) and, on an
        incremental run, without the rows at or below the watermark; delta_winners: the newest version
        per key among them (one window over all deltas together). `tombstones`: a relation of deleted
        keys with their deleting version (_compaction_tombstones_sql); a delta row that does not beat
        its key's tombstone loses to that delete, so it does not compete. -#}
    {% set selects = joinery._compaction_delta_selects(deltas, plan, settings, superseded_sql, watermark_sql,
        first_index) %}
    {% set ordering = joinery._compaction_delta_ordering(plan, settings) %}
    {% set ctes_sql %}
delta_rows as (
    {{ selects | join('\n        union all\n') }}
),

{%- if tombstones is not none %}

delta_candidates as (
    select {{ joinery._compaction_hint(settings, 'b') }}
        d.*
    from delta_rows as d
    left anti join {{ tombstones }} as b
        on {{ joinery._compaction_key_match(settings, 'd', 'b') }}
        and not {{ joinery._compaction_version_wins(settings, 'd', 'b') }}
),
{%- endif %}

delta_ranked as (
    select
        *,
        row_number() over (
            partition by {{ joinery._quoted_column_list(settings.key) }}
            order by {{ ordering | join(', ') }}
        ) as _joinery_row_number
    from {{ 'delta_candidates' if tombstones is not none else 'delta_rows' }}
),

delta_winners as (
    select
        {{ joinery._quoted_column_list(plan | map(attribute='name') | list) }},
        {{ joinery._compaction_deleted_sql(settings) }} as _joinery_is_delete
    from delta_ranked
    where _joinery_row_number = 1
)
    {%- endset %}
    {{ return(ctes_sql) }}
{% endmacro %}


{% macro _compaction_delta_selects(deltas, plan, settings, superseded_sql, watermark_sql, first_index) %}
    {#- The SELECT of each delta that delta_rows unions: its rows padded to the plan and tagged with
        its source position (1..k), filtered by _compaction_delta_filters. -#}
    {% set loaded_entry = joinery._plan_entry(plan, settings.loaded_at) if settings.loaded_at else none %}
    {% set selects = [] %}
    {% for delta in deltas %}
        {% set delta_index = loop.index %}
        {% set plan_index = first_index + loop.index0 %}
        {% set filters = joinery._compaction_delta_filters(delta, loaded_entry, plan_index, settings, superseded_sql,
            watermark_sql) %}
        {% set select_sql %}
        select
            {{ joinery._padded_select_list(plan, plan_index) }},
            {{ delta_index }} as _joinery_source
        from {{ delta }}
        {%- if filters %}
        where {{ filters | join('\n            and ') }}
        {%- endif %}
        {%- endset %}
        {% do selects.append(select_sql) %}
    {% endfor %}
    {{ return(selects) }}
{% endmacro %}


{% macro _compaction_delta_filters(delta, loaded_entry, plan_index, settings, superseded_sql, watermark_sql) %}
    {#- The conditions on one delta's rows (none without loaded_at, `loaded_entry`): not superseded by
        the snapshot, above the watermark, and in a joinery_upsert model a stop on a NULL loaded_at. -#}
    {% set filters = [] %}
    {% if loaded_entry is not none %}
        {% set loaded_sql = joinery._quote_identifier(loaded_entry.sources[plan_index]) %}
        {% if superseded_sql is not none %}
            {% do filters.append('not coalesce(' ~ loaded_sql ~ ' < ' ~ superseded_sql ~ ', false)') %}
        {% endif %}
        {% if watermark_sql is not none %}
            {#- A NULL loaded_at passes, so that the check below stops the run: filtered out by
                `>`, the row would be skipped silently by every incremental run. -#}
            {% do filters.append('(' ~ loaded_sql ~ ' > ' ~ watermark_sql ~ ' or ' ~ loaded_sql ~ ' is null)') %}
        {% endif %}
        {% if settings.get('require_loaded_at') %}
            {% do filters.append(joinery._fail_when_sql(loaded_sql ~ ' is null', joinery._sql_string(
                'joinery.compact: a row of ' ~ delta ~ ' has a NULL loaded_at (' ~ loaded_entry.sources[plan_index]
                ~ '); an incremental run reads only rows loaded after its watermark, so it could never read '
                ~ 'this one: give every delta row a loaded_at'))) %}
        {% endif %}
    {% endif %}
    {{ return(filters) }}
{% endmacro %}


{% macro _compaction_delta_ordering(plan, settings) %}
    {#- The window order that ranks a key's delta rows, the winner first: updated_at, loaded_at
        (NULLs last), the later source, then every other column in a comparable form, so that only
        exact duplicates tie. -#}
    {% set ordering = [] %}
    {% for column in joinery._compaction_version_columns(settings) %}
        {% do ordering.append(joinery._quote_identifier(column) ~ ' desc nulls last') %}
    {% endfor %}
    {% do ordering.append('_joinery_source desc') %}
    {% for entry in plan if entry.name not in settings.key + [settings.updated_at, settings.loaded_at] %}
        {% do ordering.append(joinery._comparable_sql(joinery._quote_identifier(entry.name), entry.type)
            ~ ' desc nulls last') %}
    {% endfor %}
    {{ return(ordering) }}
{% endmacro %}
