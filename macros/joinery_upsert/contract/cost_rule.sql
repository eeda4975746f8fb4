{#- The cost rule: when an incremental run would cost more than a rebuild, the run rebuilds
    instead, as Databricks' Enzyme falls back to a full recompute. Its inputs are the whole runs the
    table's commits recorded (contract/table_state.sql); the build-mode decision asks it while the
    model compiles (contract/build_mode.sql). -#}

{% macro _upsert_cost_reason(costs, threshold) %}
    {#- The reason to rebuild, or none (always none when the rule is off: _upsert_cost_rule_on).
        Rebuild when the last incremental run took longer than
        `threshold` times the last full build, or more than half of that when the only full build
        measured is the table's first (its JVM was cold: the rebuild measures a full build again).
        After PROBE_AFTER rebuilds in a row, one incremental run measures again what it costs now.
        `costs`: {full_seconds, full_first, incremental_seconds, full_builds_since_incremental}. -#}
    {% set probe_after = 8 %}
    {% if not joinery._upsert_cost_rule_on(threshold) %}
        {{ return(none) }}
    {% endif %}
    {% set full = costs.get('full_seconds') %}
    {% set incremental = costs.get('incremental_seconds') %}
    {% if full is none or incremental is none or costs.get('full_builds_since_incremental', 0) >= probe_after %}
        {{ return(none) }}
    {% endif %}
    {% if incremental > threshold * full %}
        {{ return(('rebuilt: its last incremental run took %.1f s, more than %s x its last full build (%.1f s; config '
            ~ 'rebuild_threshold)') | format(incremental, threshold, full)) }}
    {% elif costs.get('full_first') and incremental > 0.5 * threshold * full %}
        {{ return(('rebuilt to measure a full build again: its last incremental run took %.1f s, and the only full '
            ~ 'build measured is the first (%.1f s, with a cold JVM)') | format(incremental, full)) }}
    {% endif %}
    {{ return(none) }}
{% endmacro %}


{% macro _upsert_cost_rule_on(threshold) %}
    {#- Whether the rule may rebuild this model: not with rebuild_threshold 'always_incremental'
        (`threshold` none), nor for a table whose own change data feed is on (a rebuild replaces the
        table, which its feed's readers cannot follow). -#}
    {% set own_feed = (config.get('tblproperties') or {}).get('delta.enableChangeDataFeed') | string | lower %}
    {{ return(threshold is not none and own_feed != 'true') }}
{% endmacro %}


{% macro _upsert_settings_rebuild() %}
    {#- The rebuild_threshold config as a positive number, or none for 'always_incremental' (the cost
        rule off, contract/build_mode.sql). Default 1: rebuild when incremental runs cost more than a
        full build. -#}
    {% set value = config.get('rebuild_threshold', 1) %}
    {% if value in [none, 'always_incremental'] %}
        {{ return(none) }}
    {% endif %}
    {#- A config set in dbt_project.yml through a var arrives as text. -#}
    {% if value is string and modules.re.fullmatch('[0-9]+([.][0-9]+)?', value.strip()) %}
        {% set value = value.strip() | float %}
    {% endif %}
    {% if value is not number or value is boolean or value <= 0 %}
        {{ joinery._upsert_config_error('rebuild_threshold', value, "expected a positive number (rebuild when the "
            ~ "last incremental run took longer than that many times the last full build; default 1) or "
            ~ "'always_incremental'") }}
    {% endif %}
    {{ return(value | float) }}
{% endmacro %}


{% macro _upsert_config_error(argument, value, allowed) %}
    {#- A bad config, stopped before the run stages anything: joinery_upsert's error format
        (pipeline/errors.sql, _upsert_argument_error), from the contract's own checks. -#}
    {{ exceptions.raise_compiler_error('joinery_upsert (model ' ~ model.name ~ '): argument `' ~ argument ~ '` got '
        ~ tojson(value) ~ ': ' ~ allowed) }}
{% endmacro %}
