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
    {% set settings = joinery._upsert_settings() %}
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

    {% set merged = settings.file_format in ('delta', 'iceberg') %}
    {% set state = joinery._upsert_run_state(target, settings, merged) %}
    {% set mode = joinery._upsert_decide_build_mode(state.costs, settings, state.built) %}
    {% set sql = joinery._upsert_model_sql(mode) %}
    {% do joinery._upsert_assert_contract(sql, settings) %}
    {% do joinery._upsert_apply(target, existing, sql, settings, mode, state) %}

    {% if not (merged and mode.full) %}
        {#- A delta or iceberg full build creates the table with them. -#}
        {% do joinery._upsert_apply_properties(target) %}
    {% endif %}
    {% do apply_grants(target, config.get('grants'), should_revoke=should_revoke(existing, full_refresh_mode=true)) %}
    {{ run_hooks(post_hooks, inside_transaction=True) }}
    {% do persist_docs(target, model) %}
    {{ run_hooks(post_hooks, inside_transaction=False) }}
    {{ return({'relations': [target]}) }}
{% endmaterialization %}


{% macro _upsert_run_state(target, settings, merged) %}
    {#- What the run knows of the table before it decides its build mode: on an incremental run of a
        delta or iceberg table, what its commits say (merge_commit/table_state.sql: how it was built,
        checked against the config, and the times of its last runs); of a parquet/orc/Hive table, its
        properties; {'costs': {}} on a full build. -#}
    {% if joinery._upsert_structural_build_mode().full %}
        {{ return({'built': none, 'costs': {}, 'properties': none}) }}
    {% elif not merged %}
        {#- parquet/orc/Hive: the table's properties (directory_commit/journal.sql), which its commits
            keep the times of its runs in (`joinery.costs`). -#}
        {% set properties = joinery._table_properties(target.render()) %}
        {{ return({'built': none, 'properties': properties,
            'costs': fromjson(properties.get('joinery.costs') or '{}') or {}}) }}
    {% endif %}
    {% set state = joinery._upsert_table_state(target, settings) %}
    {#- Before the cost rule: a changed key or partitioning is an error whether or not this run would
        rebuild, so that it changes only with --full-refresh. -#}
    {% do joinery._upsert_check_built(target, state.built, settings) %}
    {{ return(state) }}
{% endmacro %}


{% macro _upsert_apply(target, existing, sql, settings, mode, state=none) %}
    {#- Apply the run's SQL to `target` by the commit path of its format: prepare (checks, and on
        parquet the new version written and checked), then the tombstones (tombstones.sql), then
        the one commit. Also how tombstones.sql writes its companion table. -#}
    {% if settings.file_format in ('delta', 'iceberg') %}
        {% set prepared = joinery._upsert_merge_prepare(target, sql, settings, mode, state) %}
    {% else %}
        {% set prepared = joinery._upsert_rewrite_prepare(target, existing, sql, settings, mode,
            state.properties if state else none) %}
    {% endif %}
    {% if not prepared.skip %}
        {#- Before the table's commit: a tombstone whose commit fails is applied again by the next run. -#}
        {% do joinery._upsert_write_tombstones(target, prepared.changes, prepared.change_info, settings, mode.full) %}
    {% endif %}
    {% if settings.file_format in ('delta', 'iceberg') %}
        {% do joinery._upsert_merge_commit(target, existing, sql, settings, prepared) %}
    {% else %}
        {% do joinery._upsert_rewrite_commit(target, existing, settings, prepared) %}
    {% endif %}
{% endmacro %}
