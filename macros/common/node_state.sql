{#- State that one macro hands to another while one node runs: the joinery_upsert build mode its
    materialization decided (joinery_upsert/contract/build_mode.sql) and the table's previous state
    (contract/table_state.sql); joinery_upsert is its only user. It lives in dbt's statement results
    (store_result / load_result), which belong to the node's own Jinja context: nothing of it
    outlives the node, another node never sees it, and dbt's manifest and `graph` are never written.
    A context is either the node's compile or its run, so state set while compiling is not seen by
    the run: callers that need a value at run time compute it there (docs/DESIGN.md, "State"). -#}

{% macro _node_state(name) %}
    {#- What this node's context holds under `name` (_set_node_state), or none. load_result hands a
        result out once, so it is stored again for the next reader. -#}
    {% set key = 'joinery_state_' ~ name %}
    {% set found = load_result(key) %}
    {% if found is none %}
        {{ return(none) }}
    {% endif %}
    {% do store_result(key, response=found.response) %}
    {{ return(found.response) }}
{% endmacro %}


{% macro _set_node_state(name, value) %}
    {#- Keep `value` under `name` for the rest of this node's context (_node_state). -#}
    {% do store_result('joinery_state_' ~ name, response=value) %}
{% endmacro %}
