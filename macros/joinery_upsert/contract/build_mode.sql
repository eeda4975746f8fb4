{#- The one build-mode decision of a joinery_upsert model: a full build, or an incremental run that
    applies the changes its SELECT yields. joinery.is_incremental() and the materialization both ask
    joinery._upsert_build_mode(), so a model can never select only changes while its table is
    rebuilt from them.

    Two parts (docs/upsert.md, "Full build or incremental run"):
    - what dbt already knows, the same while the model compiles and while it runs, at no statement:
      --full-refresh, and from dbt's relation cache whether the table exists as a table joinery can
      merge into (_upsert_structural_build_mode);
    - when the run would cost more than a rebuild (config rebuild_threshold, from the recorded
      times of its earlier runs), the materialization rebuilds instead. It decides that at the start
      of the run (_upsert_decide_build_mode) and keeps the decision for the rest of the run
      (joinery._set_node_state), then renders the model's full-build SQL (_upsert_model_sql). -#}

{% macro _upsert_build_mode() %}
    {#- {'full': bool, 'reason': text}: what the materialization decided for this run, once it has;
        before that (while the model compiles), what dbt already knows. -#}
    {% set decided = joinery._node_state('upsert_build_mode') %}
    {% if decided is not none %}
        {{ return(decided) }}
    {% endif %}
    {{ return(joinery._upsert_structural_build_mode()) }}
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
    {% if file_format in ('delta', 'iceberg') %}
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
