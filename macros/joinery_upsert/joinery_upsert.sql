{#- The joinery_upsert materialization: apply the changed rows a model selects (upserts, and deletes
    through a boolean delete-marker column) to a table by `unique_key`. delta/iceberg: one MERGE
    (merge.sql). parquet/orc/Hive SerDe tables: write the new version to a fresh directory and
    commit it with metastore calls only, never touching the live files (rewrite.sql, journal.sql;
    docs/upsert.md walks through why that is crash safe). Spark SQL only, so `adapter='spark'`:
    dbt finds it for dbt-spark and for adapters built on it, and no other adapter picks it up. -#}

{% materialization joinery_upsert, adapter='spark' %}
    {% set settings = joinery.upsert_settings() %}
    {% set target = this.incorporate(type='table') %}
    {% do joinery.validate_catalog_format(target, settings.file_format) %}
    {% set existing = adapter.get_relation(database=this.database, schema=this.schema, identifier=this.identifier) %}

    {{ run_hooks(pre_hooks, inside_transaction=False) }}
    {{ run_hooks(pre_hooks, inside_transaction=True) }}
    {% do joinery.upsert_assert_contract(compiled_code, settings) %}

    {% if existing is not none and not existing.is_table %}
        {#- A view holds no data: nothing to keep while the table is built. -#}
        {% do adapter.drop_relation(existing) %}
        {% set existing = none %}
    {% endif %}

    {% if settings.file_format in ('delta', 'iceberg') %}
        {% do joinery.upsert_by_merge(target, existing, compiled_code, settings) %}
    {% else %}
        {% do joinery.upsert_by_rewrite(target, existing, compiled_code, settings) %}
    {% endif %}

    {% do joinery.upsert_apply_properties(target, settings) %}
    {% do apply_grants(target, config.get('grants'), should_revoke=should_revoke(existing, full_refresh_mode=true)) %}
    {{ run_hooks(post_hooks, inside_transaction=True) }}
    {% do persist_docs(target, model) %}
    {{ run_hooks(post_hooks, inside_transaction=False) }}
    {{ return({'relations': [target]}) }}
{% endmaterialization %}


{% macro upsert_fail(message, changes=none) %}
    {#- The one way joinery_upsert stops a run: drop the run's cached changes first (when staged), so
        that a long-lived session (the embedded target's, a Thrift server's) does not keep them, then
        raise with the one prefix, `joinery_upsert (model <name>): `. An error Spark raises cannot be
        caught in Jinja; that run's cache is left to Spark. -#}
    {% if changes is not none %}
        {% do joinery.upsert_drop_changes(changes) %}
    {% endif %}
    {{ exceptions.raise_compiler_error(joinery.upsert_where() ~ ': ' ~ message) }}
{% endmacro %}


{% macro upsert_where() %}
    {#- The one error prefix of joinery_upsert: `joinery_upsert (model <name>)`. -#}
    {{ return('joinery_upsert (model ' ~ model.name ~ ')') }}
{% endmacro %}


{% macro upsert_argument_error(argument, value, allowed, changes=none) %}
    {#- upsert_fail for a config: names the argument, the bad value and what is allowed. -#}
    {{ joinery.upsert_fail('argument `' ~ argument ~ '` got ' ~ tojson(value) ~ ': ' ~ allowed, changes) }}
{% endmacro %}
