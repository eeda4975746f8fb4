{#- The joinery_upsert materialization: apply the changed rows a model selects (upserts, and deletes
    through a boolean delete-marker column) to a table by `unique_key`, in one commit. The parts, in
    the order a run takes them (docs/upsert.md walks through each):
    - contract/: what models call, and the one build-mode decision (full build or incremental);
    - pipeline/: the settings, the cost rule that may turn a run into a rebuild, the checks;
    - merge_commit/: delta and iceberg, one `create or replace` or one MERGE;
    - directory_commit/: parquet, orc and Hive SerDe tables, a new version in a fresh directory
      committed by metastore calls, never touching the live files.
    Spark SQL only, so `adapter='spark'`: dbt finds it for dbt-spark and for adapters built on it,
    and no other adapter picks it up. -#}

{% materialization joinery_upsert, adapter='spark' %}
    {#- The run's start on dbt's clock: the cost rule measures whole runs from here. -#}
    {% set started = modules.datetime.datetime.now().timestamp() %}
    {#- A capability that planned the run while the model compiled (contract/plan.sql) read the table's
        state then: the run does not read it again. -#}
    {% set plan = joinery._upsert_compiled_plan(compiled_code) %}
    {#- A planned SELECT inside the model's own SQL: the run learns the rest itself, but its SQL is of
        the mode that plan decided, and its MERGE still compares the plan's versions. -#}
    {% set embedded = joinery._upsert_embedded_plan(compiled_code) if plan is none else none %}
    {% set settings = joinery._upsert_settings(plan or embedded) %}
    {% set target = this.incorporate(type='table') %}
    {% do joinery.validate_catalog_format(target, settings.file_format) %}
    {% set existing = adapter.get_relation(database=this.database, schema=this.schema, identifier=this.identifier) %}

    {{ run_hooks(pre_hooks, inside_transaction=False) }}
    {{ run_hooks(pre_hooks, inside_transaction=True) }}

    {% if existing is not none and not existing.is_table %}
        {#- A view holds no data: nothing to keep while the table is built. -#}
        {% do adapter.drop_relation(existing) %}
        {% set existing = none %}
    {% endif %}

    {#- The commit strategy of the format (commit_strategy.sql): every step below names it, not the format. -#}
    {% set strategy = joinery._upsert_commit_strategy(settings) %}
    {% set state = joinery._upsert_run_state(target, settings, strategy) if plan is none
        else joinery._upsert_planned_state(target, settings, strategy, plan) %}
    {% if plan is none %}
        {% do state.update({'versions': (embedded or {}).get('versions')}) %}
    {% endif %}
    {#- The decision the model's compile took (contract/build_mode.sql): from its plan, or asked again
        of the same macro with the same inputs. Its SQL is the compiled SQL, always. -#}
    {% set decided = joinery._upsert_planned_build_mode(plan or embedded, state) if plan or embedded
        else joinery._upsert_build_mode(state) %}
    {% set mode = joinery._upsert_run_mode(decided, started, plan) %}
    {% do joinery._upsert_log_phase(target, mode, 'decided: ' ~ ('full build (' ~ mode.reason ~ ')' if mode.full
        else 'incremental')) %}
    {% do joinery._upsert_assert_contract(compiled_code, settings) %}
    {% do joinery._upsert_apply(target, existing, compiled_code, settings, mode, state) %}

    {% if not (mode.full and strategy.full_build_sets_properties) %}
        {#- A delta or iceberg full build creates the table with them. -#}
        {% do joinery._upsert_apply_properties(target) %}
    {% endif %}
    {% do apply_grants(target, config.get('grants'), should_revoke=should_revoke(existing, full_refresh_mode=true)) %}
    {{ run_hooks(post_hooks, inside_transaction=True) }}
    {% do persist_docs(target, model) %}
    {{ run_hooks(post_hooks, inside_transaction=False) }}
    {% do joinery._upsert_log_phase(target, mode, 'done') %}
    {{ return({'relations': [target]}) }}
{% endmaterialization %}


{% macro _upsert_run_state(target, settings, strategy) %}
    {#- What an unplanned run knows of the table before it decides its build mode: nothing on a full
        build ({'costs': {}}), else what its commit strategy reads (`state`: a delta or iceberg table's
        commits, checked against the config; a parquet/orc/Hive table's properties). -#}
    {% if joinery._upsert_structural_build_mode().full %}
        {{ return({'built': none, 'costs': {}, 'properties': none}) }}
    {% endif %}
    {{ return(strategy.state(target, settings)) }}
{% endmacro %}


{% macro _upsert_planned_state(target, settings, strategy, plan) %}
    {#- The state a run's plan carries (contract/plan.sql), as its commit strategy reads it
        (`planned_state`), with the plan itself. -#}
    {% set state = strategy.planned_state(target, settings, plan) %}
    {% do state.update({'plan': plan}) %}
    {{ return(state) }}
{% endmacro %}


{% macro _upsert_apply(target, existing, sql, settings, mode, state=none) %}
    {#- Apply the run's SQL to `target` by the commit path of its format: prepare (the changes staged
        and their figures read; on parquet the new version then written and checked), the tombstones
        (tombstones.sql), then the one commit. Also how tombstones.sql writes a parquet companion. -#}
    {% set plan = (state or {}).get('plan') %}
    {% if plan is not none and not mode.full and plan.get('rows') == 0 %}
        {#- The plan counted no new input: nothing to write, no statement to send. -#}
        {% do joinery._upsert_report_unchanged(target, 'no new input') %}
        {{ return(none) }}
    {% endif %}
    {% set strategy = joinery._upsert_commit_strategy(settings) %}
    {% set prepared = strategy.prepare(target, existing, sql, settings, mode, state) %}
    {% do joinery._upsert_log_phase(target, mode,
        'full build prepared' if mode.full else 'changes staged and counted') %}
    {% if strategy.write is not none %}
        {% do strategy.write(target, existing, settings, prepared) %}
        {% do joinery._upsert_log_phase(target, mode, 'new version written and checked') %}
    {% endif %}
    {% if not prepared.skip %}
        {#- Before the table's commit: a tombstone whose commit fails is applied again by the next run. -#}
        {% do joinery._upsert_write_tombstones(target, prepared.changes, prepared.change_info, settings, mode.full,
            prepared.stats) %}
    {% endif %}
    {% do strategy.commit(target, existing, settings, prepared) %}
    {% do joinery._upsert_log_phase(target, mode, 'committed' if not prepared.skip else 'nothing to commit') %}
{% endmacro %}


{% macro _upsert_log_phase(target, mode, phase) %}
    {#- One phase of a run in dbt's debug log, with the seconds since the run's start (dbt's clock), so
        that a long run shows where its time went; no statement. Its prefix is not the run's outcome
        line's (`joinery_upsert <table>: ...`), which readers of the log look for. -#}
    {% if mode.get('started') is not none %}
        {{ log('joinery_upsert.phase ' ~ target ~ ': ' ~ phase ~ ' at %.1f s' | format(
            modules.datetime.datetime.now().timestamp() - mode.started), info=false) }}
    {% endif %}
{% endmacro %}
