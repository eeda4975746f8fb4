{#- What a delta or iceberg run knows of its table before it decides its build mode: what the table's
    commits say (contract/table_state.sql), checked against the config. -#}

{% macro _upsert_merge_state(target, settings) %}
    {#- An unplanned incremental run: the table's last commits read now ({'built', 'costs'}). Before
        the cost rule: a changed key or partitioning is an error whether or not this run would
        rebuild, so that it changes only with --full-refresh. -#}
    {% set state = joinery._upsert_table_state(target, settings) %}
    {% do joinery._upsert_check_built(target, state.built, settings) %}
    {{ return(state) }}
{% endmacro %}


{% macro _upsert_merge_planned_state(target, settings, plan) %}
    {#- A planned run: what the table's commits said when the model compiled (contract/plan.sql),
        checked as _upsert_merge_state checks them. -#}
    {% if plan.mode == 'incremental' %}
        {% do joinery._upsert_check_built(target, plan.get('built'), settings) %}
    {% endif %}
    {{ return({'built': plan.get('built'), 'costs': plan.get('costs') or {}, 'properties': none}) }}
{% endmacro %}
