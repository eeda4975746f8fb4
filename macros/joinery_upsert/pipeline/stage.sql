{#- The changed rows of an incremental run, computed once: staged as a cached view that the figures
    (preflight.sql), the tombstones and the commit statement all read, and dropped at the end of the
    run or before any error (errors.sql, _upsert_fail). -#}

{% macro _upsert_stage_changes(sql, relation=none) %}
    {#- The model's changed rows, computed once and cached for this run: validation, statistics and
        the write all read them, and the model's SELECT (which may read {{ this }}) is evaluated
        before anything changes. `cache table ... as` creates the temp view and caches it in one
        statement. It cannot replace a view, so the name is this invocation's own: a run that
        failed before dropping its view leaves it in a long-lived session (the embedded `local`
        target) without blocking the next run. Temp views have no schema, and models of one name in
        two schemas can run side by side in one session (dbt threads on the embedded target), so
        the suffix is of this invocation and this relation (`relation`, default this: the
        companion of tombstones.sql stages its own changes while the model's are cached). -#}
    {% set relation = relation if relation is not none else this %}
    {% set changes = relation.identifier ~ '__joinery_changes_' ~ local_md5(invocation_id ~ relation.render())[:8] %}
    {% do run_query('cache table ' ~ changes ~ ' as\n' ~ sql) %}
    {{ return(changes) }}
{% endmacro %}


{% macro _upsert_drop_changes(changes) %}
    {#- Drop the run's cached changes (`drop view` uncaches a temp view as it drops it): at the end of
        a run, and in _upsert_fail before each error once they are cached. -#}
    {% do run_query('drop view if exists ' ~ changes) %}
{% endmacro %}
