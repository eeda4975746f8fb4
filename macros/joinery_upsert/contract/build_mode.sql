{#- The one build-mode decision of a joinery_upsert model: a full build, or an incremental run that
    applies the changes its SELECT yields. Made while the model compiles, by _upsert_build_mode:
    joinery.is_incremental() asks it, and so does a capability that plans its run (contract/plan.sql),
    which carries the answer in its plan; the materialization reads the plan, or asks the same macro
    with the same inputs (docs/upsert.md, "Full build or incremental run"). So the SQL dbt compiled
    is always the SQL of the mode the run takes, and no model is ever rendered again.

    Two parts:
    - what dbt already knows, at no statement: --full-refresh, and from dbt's relation cache whether
      the table exists as a table joinery can merge into (_upsert_structural_build_mode);
    - when an incremental run would cost more than a rebuild (config rebuild_threshold, from the
      recorded times of the table's earlier runs: contract/cost_rule.sql), a rebuild. -#}

{% macro _upsert_build_mode(previous=none, has_changes=true) %}
    {#- {'full': bool, 'reason': text, 'built': the table's newest note, 'costs': the times of its
        runs}. `previous`: the table's earlier runs (_upsert_previous_state), when the caller read
        them; else they are read here, and only when the cost rule could rebuild. `has_changes`:
        false when a capability knows while compiling that the run changes nothing, which never
        rebuilds. -#}
    {% set structural = joinery._upsert_structural_build_mode() %}
    {% if structural.full %}
        {{ return({'full': true, 'reason': structural.reason, 'built': none, 'costs': {}}) }}
    {% endif %}
    {% set threshold = joinery._upsert_settings_rebuild() %}
    {% if previous is none and not (has_changes and joinery._upsert_cost_rule_on(threshold)) %}
        {{ return({'full': false, 'reason': 'incremental', 'built': none, 'costs': {}}) }}
    {% endif %}
    {% set previous = previous if previous is not none else joinery._upsert_previous_state() %}
    {% set reason = joinery._upsert_cost_reason(previous.costs or {}, threshold) if has_changes else none %}
    {{ return({'full': reason is not none, 'reason': reason or 'incremental', 'built': previous.built,
        'costs': previous.costs or {}}) }}
{% endmacro %}


{% macro _upsert_structural_build_mode() %}
    {#- The decision from the --full-refresh flag and dbt's relation cache (listed once per schema at
        the start of the invocation): a full build on a first run, for a view, a table of another
        format, or a parquet/Hive table joinery did not build; else incremental. -#}
    {% if not execute or model is not mapping or model.get('resource_type') != 'model'
        or config.get('materialized') != 'joinery_upsert' %}
        {{ return({'full': true, 'reason': 'not a joinery_upsert model run'}) }}
    {% endif %}
    {% if should_full_refresh() %}
        {{ return({'full': true, 'reason': 'full refresh'}) }}
    {% endif %}
    {% set relation = adapter.get_relation(database=this.database, schema=this.schema, identifier=this.identifier) %}
    {% if relation is none %}
        {{ return({'full': true, 'reason': 'first build'}) }}
    {% elif not relation.is_table %}
        {{ return({'full': true, 'reason': 'the relation is a ' ~ relation.type}) }}
    {% endif %}
    {% set file_format = (config.get('file_format') or 'parquet') | lower %}
    {% if joinery._upsert_commit_path(file_format) == 'merge' %}
        {% set provider = joinery._relation_provider(relation) %}
        {% if provider != file_format %}
            {{ return({'full': true, 'reason': 'the table is stored as ' ~ provider ~ ', not ' ~ file_format}) }}
        {% endif %}
    {% elif not joinery._upsert_built_by_joinery(relation) %}
        {{ return({'full': true, 'reason': 'the table was not built by joinery_upsert'}) }}
    {% endif %}
    {{ return({'full': false, 'reason': 'incremental'}) }}
{% endmacro %}


{% macro _upsert_built_by_joinery(relation) %}
    {#- Whether a parquet/orc/Hive table has joinery's `joinery.root` property: read from dbt's
        relation cache (`show table extended` prints a V1 table's properties), or with one
        `show tblproperties` when the cache has no listing of the table. -#}
    {% if relation.information %}
        {{ return(modules.re.search('(?m)^Table Properties: \\[(.*[ ,])?joinery\\.root=', relation.information)
            is not none) }}
    {% endif %}
    {{ return('joinery.root' in joinery._table_properties(relation.render())) }}
{% endmacro %}
