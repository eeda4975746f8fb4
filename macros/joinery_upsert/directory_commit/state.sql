{#- What a parquet, orc or Hive run knows of its table before it decides its build mode: the table's
    properties, which its commits keep the journal and the times of its runs in (journal.sql). -#}

{% macro _upsert_rewrite_state(target, settings) %}
    {#- An unplanned incremental run: the properties read now, and the times of the table's runs
        (`joinery.costs`) from them. -#}
    {% set properties = joinery._table_properties(target.render()) %}
    {{ return({'built': none, 'properties': properties,
        'costs': fromjson(properties.get('joinery.costs') or '{}') or {}}) }}
{% endmacro %}


{% macro _upsert_rewrite_planned_state(target, settings, plan) %}
    {#- A planned run: the times of its runs from the plan (contract/plan.sql), and on an incremental
        run the properties from dbt's relation cache, which lists them. -#}
    {% set properties = joinery._upsert_cached_properties(target) if plan.mode == 'incremental' else none %}
    {{ return({'built': plan.get('built'), 'costs': plan.get('costs') or {}, 'properties': properties}) }}
{% endmacro %}
