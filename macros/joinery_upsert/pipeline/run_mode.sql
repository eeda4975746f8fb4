{#- The mode a run takes, as the model's compile decided it (contract/build_mode.sql), with what
    the rest of the run needs around it: its start on dbt's clock, the table's earlier runs, and the
    costs its commit records for the cost rule of the next run. -#}

{% macro _upsert_planned_build_mode(plan, state) %}
    {#- The decision a capability planned while the model compiled (contract/plan.sql), the cost rule
        included: its SQL is of that mode. What dbt knows structurally is the same at both times, so
        a full build it finds stays one. `state`: what the plan carries of the table's earlier runs
        (_upsert_planned_state). -#}
    {% set structural = joinery._upsert_structural_build_mode() %}
    {% set decided = structural if structural.full
        else {'full': plan.mode == 'full', 'reason': plan.get('reason') or structural.reason} %}
    {{ return({'full': decided.full, 'reason': decided.reason, 'built': state.built, 'costs': state.costs}) }}
{% endmacro %}


{% macro _upsert_run_mode(decided, started, plan=none) %}
    {#- The run's mode: the decision (`decided`: full, reason, and the table's newest note `built` and
        run times `costs`, contract/table_state.sql), the run's start on dbt's clock (`started`), and
        from the plan the feed versions the run pinned (fk_join/fk_join_change_feed.sql) and the
        columns of a partial update. -#}
    {{ return({'full': decided.full, 'reason': decided.reason, 'started': started, 'costs': decided.costs or {},
        'built': decided.built, 'feeds': (plan or {}).get('feeds'), 'partial': (plan or {}).get('partial')}) }}
{% endmacro %}


{% macro _upsert_lead_seconds(mode) %}
    {#- Seconds on dbt's clock from the run's start to now: what the run spent before the statement
        whose Spark time its note records (the cost rule adds the two). -#}
    {% set now = modules.datetime.datetime.now().timestamp() %}
    {{ return(now - mode.get('started', now)) }}
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
