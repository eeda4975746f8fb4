{#- The two commit strategies of joinery_upsert behind one dispatch. Each implements the same steps
    with the same arguments, so the materialization names a step, never a format:
    - state(target, settings): what an unplanned incremental run reads of the table before it decides;
    - planned_state(target, settings, plan): the same, from the plan the model's compile made;
    - prepare(target, existing, sql, settings, mode, state): everything before the commit;
    - write(target, existing, settings, prepared): what is written before the tombstones and the
      commit (none: the strategy writes in its commit statement);
    - commit(target, existing, settings, prepared): the one commit, or none when nothing changed;
    - full_build_sets_properties: whether a full build's commit creates the table with its properties.
    contract/contract.sql (_upsert_commit_path) maps each format to its strategy, and
    pipeline/settings.sql validates the format with it. -#}

{% macro _upsert_commit_strategy(settings) %}
    {% set strategies = {
        'merge': {
            'state': joinery._upsert_merge_state,
            'planned_state': joinery._upsert_merge_planned_state,
            'prepare': joinery._upsert_merge_prepare,
            'write': none,
            'commit': joinery._upsert_merge_commit,
            'full_build_sets_properties': true,
        },
        'directory': {
            'state': joinery._upsert_rewrite_state,
            'planned_state': joinery._upsert_rewrite_planned_state,
            'prepare': joinery._upsert_rewrite_prepare,
            'write': joinery._upsert_rewrite_write,
            'commit': joinery._upsert_rewrite_commit,
            'full_build_sets_properties': false,
        },
    } %}
    {{ return(strategies[settings.commit]) }}
{% endmacro %}
