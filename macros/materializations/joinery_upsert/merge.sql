{#- joinery_upsert on delta and iceberg tables: one MERGE (first run / full refresh: one atomic
    `create or replace table ... as select`). -#}

{% macro upsert_by_merge(target, existing, changes, change_info, settings) %}
    {% set target_sql = target.render() %}
    {% set names = change_info.columns | map(attribute='name') | list %}
    {% if existing is none or should_full_refresh() %}
        {% call statement('main') %}
            create or replace table {{ target_sql }}
            {{ joinery.upsert_storage_clause(settings) }}
            as select {{ joinery.quoted_column_list(names) }}
            from {{ changes }} as changed
            where {{ joinery.upsert_live_condition(change_info, 'changed') }}
        {% endcall %}
    {% elif change_info.rows == 0 %}
        {% call statement('main') %}select 'joinery_upsert: no changed rows' as status{% endcall %}
    {% else %}
        {% set target_names = joinery.column_names(target) %}
        {% set added = [] %}
        {% for column in change_info.columns if joinery.find_column(target_names, column.name) is none %}
            {% do added.append(joinery.quote_identifier(column.name) ~ ' ' ~ column.type) %}
        {% endfor %}
        {% do joinery.upsert_check_schema_unchanged(settings, changes, target_sql, target_names, names) %}
        {% if added %}
            {% do run_query('alter table ' ~ target_sql ~ ' add columns (' ~ added | join(', ') ~ ')') %}
        {% endif %}
        {% call statement('main') %}
            {{ joinery.upsert_merge_sql(target_sql, changes, change_info['keys'], names, change_info.deleted) }}
        {% endcall %}
    {% endif %}
    {% do joinery.upsert_drop_changes(changes) %}
{% endmacro %}
