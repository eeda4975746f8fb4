{#- Whether this run rebuilds because that costs less, and the SQL the run then applies: the second
    part of the build-mode decision (joinery_upsert/contract/build_mode.sql). -#}

{% macro _upsert_decide_build_mode(costs, settings, built=none) %}
    {#- The run's build mode, decided once at its start and kept for the rest of the run
        (joinery._set_node_state): what dbt already knows, and on a run that would be incremental,
        the cost rule over `costs` (the recorded times of earlier runs, _upsert_cost_rule). With it:
        the run's start on dbt's clock, the costs it decided from (_upsert_run_costs), and `built`,
        the table's newest note (merge_commit/table_state.sql), where a change-feed model finds the
        versions its last run read (fk_join/fk_join_change_feed.sql). -#}
    {% set mode = joinery._upsert_structural_build_mode() %}
    {% if not mode.full %}
        {% set mode = joinery._upsert_cost_rule(costs, settings) or mode %}
    {% endif %}
    {#- The run's start on dbt's clock: a parquet commit records the run's time (journal.sql). -#}
    {% set mode = {'full': mode.full, 'reason': mode.reason, 'started': modules.datetime.datetime.now().timestamp(),
        'costs': costs, 'built': built} %}
    {% do joinery._set_node_state('upsert_build_mode', mode) %}
    {{ return(mode) }}
{% endmacro %}


{% macro _upsert_cost_rule(costs, settings) %}
    {#- A full build when the last incremental run took longer than rebuild_threshold times the last
        full build (Databricks' Enzyme falls back to a full recompute on the same grounds). None
        (stay incremental) when the rule is off, a time is not known yet, or after PROBE_AFTER
        rebuilds in a row: then one incremental run measures again what it costs now. A model that
        refs an ephemeral model is never rebuilt so: its full-build SQL could not be rendered again
        (_upsert_model_sql). `costs`: {full_seconds, incremental_seconds, full_builds_since_incremental}. -#}
    {% set probe_after = 8 %}
    {% if settings.rebuild_threshold is none or model.get('extra_ctes') %}
        {{ return(none) }}
    {% endif %}
    {% set full = costs.get('full_seconds') %}
    {% set incremental = costs.get('incremental_seconds') %}
    {% if full is none or incremental is none or costs.get('full_builds_since_incremental', 0) >= probe_after %}
        {{ return(none) }}
    {% endif %}
    {% if incremental <= settings.rebuild_threshold * full %}
        {{ return(none) }}
    {% endif %}
    {% set reason = 'rebuilt: its last incremental run took %.1f s, more than %s x its last full build (%.1f s; '
        ~ 'config rebuild_threshold)' %}
    {{ return({'full': true, 'reason': reason | format(incremental, settings.rebuild_threshold, full)}) }}
{% endmacro %}


{% macro _upsert_model_sql(mode) %}
    {#- The SQL this run applies. dbt compiled the model with the decision it could make then
        (_upsert_structural_build_mode); when the cost rule turned the run into a full build, the
        compiled SQL selects only changes, so the model is rendered again, and joinery.is_incremental()
        now answers false: the full build is always the model's own full-build SQL. A change-feed
        model (config change_feed, set by fk_join) is always rendered again: its SQL reads the
        versions pinned when the run starts. -#}
    {% if config.get('change_feed') or mode.full and not joinery._upsert_structural_build_mode().full %}
        {{ return(render(model.raw_code)) }}
    {% endif %}
    {{ return(compiled_code) }}
{% endmacro %}


{% macro _upsert_run_costs(mode) %}
    {#- The costs a parquet/orc/Hive commit records (`joinery.costs`, as JSON): this run's seconds so
        far, on dbt's clock, as its mode's, and the count of full builds since the last incremental
        run. Delta and iceberg read theirs from their commits (merge_commit/table_state.sql). -#}
    {% if mode.get('started') is none %}
        {#- A companion of tombstones.sql: its table's run keeps the times. -#}
        {{ return('{}') }}
    {% endif %}
    {% set costs = {} %}
    {% do costs.update(mode.get('costs') or {}) %}
    {% set seconds = modules.datetime.datetime.now().timestamp() - mode.started %}
    {% if mode.full %}
        {% do costs.update({'full_seconds': seconds,
            'full_builds_since_incremental': costs.get('full_builds_since_incremental', 0) + 1}) %}
    {% else %}
        {% do costs.update({'incremental_seconds': seconds, 'full_builds_since_incremental': 0}) %}
    {% endif %}
    {{ return(tojson(costs)) }}
{% endmacro %}
