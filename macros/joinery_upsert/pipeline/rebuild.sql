{#- Whether this run rebuilds because that costs less, and the SQL the run then applies: the second
    part of the build-mode decision (joinery_upsert/contract/build_mode.sql). -#}

{% macro _upsert_decide_build_mode(costs, settings, built=none, started=none, plan=none) %}
    {#- The run's build mode as dbt already knows it (_upsert_structural_build_mode), kept for the
        rest of the run (joinery._set_node_state); the cost rule may turn it into a rebuild once the
        run has counted its changes (_upsert_cost_rule). With it: the run's start on dbt's clock
        (`started`), the costs of its earlier runs (`costs`) and `built`, the table's newest note
        (contract/table_state.sql), where a change-feed model finds the versions its last run
        read (fk_join/fk_join_change_feed.sql). A run whose capability planned it (`plan`,
        contract/plan.sql) takes the plan's mode: the capability decided it, the cost rule included,
        while the model compiled, and its SQL is of that mode. -#}
    {% set mode = joinery._upsert_structural_build_mode() %}
    {% if plan is not none and not mode.full %}
        {% set mode = {'full': plan.mode == 'full', 'reason': plan.get('reason') or mode.reason} %}
    {% endif %}
    {% do mode.update({'planned': plan is not none}) %}
    {% set mode = {'full': mode.full, 'reason': mode.reason, 'planned': mode.planned,
        'started': started or modules.datetime.datetime.now().timestamp(), 'costs': costs, 'built': built,
        'feeds': (plan or {}).get('feeds'), 'partial': (plan or {}).get('partial')} %}
    {% do joinery._set_node_state('upsert_build_mode', mode) %}
    {{ return(mode) }}
{% endmacro %}


{% macro _upsert_cost_rule(mode, settings, prepared) %}
    {#- The reason to rebuild this incremental run instead, or none: the cost rule
        (contract/cost_rule.sql) once the run has counted its changes (a run that changes nothing
        never rebuilds). A model that refs an ephemeral model is never rebuilt so: its full-build SQL
        could not be rendered again (_upsert_model_sql). -#}
    {% if mode.full or prepared.skip or model.get('extra_ctes') %}
        {{ return(none) }}
    {% endif %}
    {{ return(joinery._upsert_cost_reason(mode.get('costs') or {}, settings.rebuild_threshold)) }}
{% endmacro %}


{% macro _upsert_rebuild_mode(mode, reason) %}
    {#- The run's mode turned into a full build by the cost rule, kept for the rest of the run, so that
        joinery.is_incremental() answers false when the model is rendered again (_upsert_model_sql). -#}
    {% set rebuilt = {} %}
    {% do rebuilt.update(mode) %}
    {% do rebuilt.update({'full': true, 'reason': reason}) %}
    {% do joinery._set_node_state('upsert_build_mode', rebuilt) %}
    {{ return(rebuilt) }}
{% endmacro %}


{% macro _upsert_lead_seconds(mode) %}
    {#- Seconds on dbt's clock from the run's start to now: what the run spent before the statement
        whose Spark time its note records (the cost rule adds the two). -#}
    {% set now = modules.datetime.datetime.now().timestamp() %}
    {{ return(now - mode.get('started', now)) }}
{% endmacro %}


{% macro _upsert_model_sql(mode) %}
    {#- The SQL this run applies. dbt compiled the model with the decision it could make then
        (_upsert_structural_build_mode); when the cost rule turned the run into a full build, the
        compiled SQL selects only changes, so the model is rendered again, and joinery.is_incremental()
        now answers false: the full build is always the model's own full-build SQL. A change-feed
        model (config change_feed, set by fk_join) is always rendered again: its SQL reads the
        versions pinned when the run starts. -#}
    {% if mode.full and not mode.get('planned') and not joinery._upsert_structural_build_mode().full %}
        {{ return(render(model.raw_code)) }}
    {% endif %}
    {{ return(compiled_code) }}
{% endmacro %}


{% macro _upsert_run_costs(mode) %}
    {#- The costs a parquet/orc/Hive commit records (`joinery.costs`, as JSON): this run's seconds so
        far, on dbt's clock, as its mode's, and the count of full builds since the last incremental
        run. Delta and iceberg read theirs from their commits (contract/table_state.sql). -#}
    {% if mode.get('started') is none %}
        {#- A companion of tombstones.sql: its table's run keeps the times. -#}
        {{ return('{}') }}
    {% endif %}
    {% set costs = {} %}
    {% do costs.update(mode.get('costs') or {}) %}
    {% set seconds = modules.datetime.datetime.now().timestamp() - mode.started %}
    {% if mode.full %}
        {% do costs.update({'full_seconds': seconds, 'full_first': mode.reason == 'first build',
            'full_builds_since_incremental': costs.get('full_builds_since_incremental', 0) + 1}) %}
    {% else %}
        {% do costs.update({'incremental_seconds': seconds, 'full_builds_since_incremental': 0}) %}
    {% endif %}
    {{ return(tojson(costs)) }}
{% endmacro %}
