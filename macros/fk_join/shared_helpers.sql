{#- Helpers shared by changelog_state, fk_join and fk_join_changes: the key condition of their
    joins, and whether the calling model applies changes to an existing table. -#}

{% macro _fk_join_key_match(left_columns, right_columns, left_alias, right_alias) %}
    {{ return(joinery._key_match(left_columns, left_alias, right_alias, right_keys=right_columns, null_safe=false)) }}
{% endmacro %}


{% macro _fk_join_incremental_run() %}
    {#- True when the calling model applies changes to an existing table: a joinery_upsert model
        (joinery.is_incremental()) or a dbt incremental model (is_incremental()). -#}
    {% if not execute %}
        {{ return(false) }}
    {% endif %}
    {% set materialized = config.get('materialized') %}
    {% if materialized == 'joinery_upsert' %}
        {{ return(joinery.is_incremental()) }}
    {% elif materialized == 'incremental' %}
        {{ return(dbt.is_incremental()) }}
    {% endif %}
    {{ return(false) }}
{% endmacro %}
