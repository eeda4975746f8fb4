{#- Records in / records out (the Hydrator join metrics story) as a model post-hook:
        {{ config(post_hook="{{ joinery.record_metrics() }}") }}
    appends one row per metric to a `joinery_metrics` parquet table in the model's schema (or
    `schema`), created on first use. Docs: macros/metrics/metrics.yml. -#}

{% macro record_metrics(schema=none) %}
    {{ return(adapter.dispatch('record_metrics', 'joinery')(schema)) }}
{% endmacro %}


{% macro default__record_metrics(schema) %}
    {% if not execute %}
        {{ return('') }}
    {% endif %}
    {% if schema is not none %}
        {% do joinery._validate_identifier(schema, 'schema', 'record_metrics') %}
    {% endif %}
    {% set metrics_table = this.incorporate(path={'schema': schema or this.schema, 'identifier': 'joinery_metrics'}) %}
    {% do run_query(joinery._metrics_table_ddl(metrics_table)) %}

    {% set joins = joinery._metric_joins(model.compiled_code) %}
    {% set measures = [] %}
    {% if joins %}
        {% for join in joins %}
            {% for input in join.inputs %}
                {% do measures.append(joinery._metric_rows_in(input.name, input.relation)) %}
            {% endfor %}
            {% do measures.extend(joinery._metric_match_counts(join)) %}
        {% endfor %}
    {% else %}
        {#- a model without multi_join: its rows in are those of every model, seed or source it reads -#}
        {% for node_id in model.depends_on.nodes %}
            {% set node = graph.nodes.get(node_id) or graph.sources.get(node_id) %}
            {% if node and node.resource_type in ('model', 'seed', 'snapshot', 'source') %}
                {% set relation = api.Relation.create(database=node.database, schema=node.schema,
                    identifier=node.alias if node.resource_type != 'source' else node.identifier) %}
                {% do measures.append(joinery._metric_rows_in(node.name, relation)) %}
            {% endif %}
        {% endfor %}
    {% endif %}
    {#- On parquet, count(*) reads file footers only: no second scan of the data. -#}
    {% do measures.append("select cast(null as string) as input, 'rows_out' as metric, count(*) as value from "
        ~ this) %}

    {% set sql = [
        'insert overwrite directory ' ~ joinery._sql_string(joinery._metrics_batch_directory(metrics_table, model.name))
            ~ ' using parquet',
        'select',
        '    ' ~ joinery._sql_string(invocation_id) ~ ' as invocation_id,',
        '    current_timestamp() as recorded_at,',
        '    ' ~ joinery._sql_string(model.name) ~ ' as model,',
        '    ' ~ joinery._sql_string(this | string) ~ ' as relation,',
        '    input,',
        '    metric,',
        '    value',
        'from (',
        '    ' ~ measures | join('\n    union all\n    '),
        ') as joinery_measures'] | join('\n') %}
    {{ return(sql) }}
{% endmacro %}


{% macro _metric_joins(sql) %}
    {#- The joins multi_join wrote into the model's SQL (model.compiled_code: the post-hook runs in
        the node's run, after the SQL it reads back has run), so the counts are of the joins that
        ran, with no statement and no state (DESIGN.md, "State between macros"); [] without multi_join. -#}
    {{ return(joinery._metric_chain_joins(sql) + joinery._metric_grouped_joins(sql)) }}
{% endmacro %}


{% macro _metric_chain_joins(sql) %}
    {#- _multi_join_chain_sql's shape: `from <relation> as `<input>``, then per input `<kind> join
        <relation> as `<input>`` and its `on` / `and` key conditions, the driver's key on the left of
        the first join's. Required: the driver and its inner joins, none in a full join. -#}
    {% set name = '(`(?:[^`]|``)+`)' %}
    {% set chain = '(?m)^[ \\t]*from (.+) as ' ~ name ~ '\\n((?:[ \\t]*(?:inner|left|full|cross) join .+ as '
        ~ name ~ '\\n(?:[ \\t]*(?:on|and) .+\\n)*)+)' %}
    {% set joins = [] %}
    {% for found in modules.re.finditer(chain, sql ~ '\n') %}
        {% set inputs = [{'name': joinery._metric_unquote(found.group(2)), 'relation': found.group(1), 'keys': []}] %}
        {% set join = {'join_type': 'chain', 'required': [inputs[0].name], 'null_keys': 'distinct', 'inputs': inputs} %}
        {% for line in found.group(3).rstrip('\n').split('\n') %}
            {% set joined = modules.re.match('^\\s*(inner|left|full|cross) join (.+) as ' ~ name ~ '$', line) %}
            {% set condition = modules.re.match('^\\s*(?:on|and) (.+) (=|<=>) ' ~ name ~ '\\.' ~ name ~ '$', line) %}
            {% if joined %}
                {% do inputs.append({'name': joinery._metric_unquote(joined.group(3)), 'relation': joined.group(2),
                                     'keys': []}) %}
                {% if joined.group(1) in ('full', 'cross') %}
                    {% do join.update({'join_type': joined.group(1), 'required': []}) %}
                {% elif joined.group(1) == 'inner' %}
                    {% do join.required.append(inputs[-1].name) %}
                {% endif %}
            {% elif condition %}
                {% do inputs[-1]['keys'].append(joinery._metric_unquote(condition.group(4))) %}
                {% set driver_key = modules.re.match('^' ~ name ~ '\\.' ~ name ~ '$', condition.group(1)) %}
                {% if inputs | length == 2 and driver_key %}
                    {% do inputs[0]['keys'].append(joinery._metric_unquote(driver_key.group(2))) %}
                {% endif %}
                {% do join.update({'null_keys': 'equal'}) if condition.group(2) == '<=>' %}
            {% endif %}
        {% endfor %}
        {% do joins.append(join) %}
    {% endfor %}
    {{ return(joins) }}
{% endmacro %}


{% macro _metric_grouped_joins(sql) %}
    {#- _multi_join_grouped_sql's shape: in `joinery_tagged`, one branch per input, its key columns as
        `joinery_key_<i>` and `from <relation> as `<input>``. No input is required; NULL keys match
        nothing where the branches tag them (`joinery_null_key`). -#}
    {% set name = '(`(?:[^`]|``)+`)' %}
    {% set joins = [] %}
    {% for found in modules.re.finditer('(?ms)^[ \\t]*joinery_tagged as \\(\\n(.*?)^[ \\t]*\\),?$', sql) %}
        {% set null_keys = 'distinct' if 'as `joinery_null_key`' in found.group(1) else 'equal' %}
        {% set join = {'join_type': 'full', 'required': [], 'null_keys': null_keys, 'inputs': []} %}
        {% for branch in modules.re.split('\\n[ \\t]*union all\\n', found.group(1)) %}
            {% set source = modules.re.search('(?m)^[ \\t]*from (.+) as ' ~ name ~ '$', branch) %}
            {% set keys = [] %}
            {% set key_pattern = '(?m)^[ \\t]*' ~ name ~ '\\.' ~ name ~ ' as `joinery_key_[0-9]+`,?$' %}
            {% for key in modules.re.finditer(key_pattern, branch) %}
                {% do keys.append(joinery._metric_unquote(key.group(2))) %}
            {% endfor %}
            {% do join.inputs.append({'name': joinery._metric_unquote(source.group(2)), 'relation': source.group(1),
                                      'keys': keys}) if source %}
        {% endfor %}
        {% do joins.append(join) %}
    {% endfor %}
    {{ return(joins) }}
{% endmacro %}


{% macro _metric_unquote(name) %}
    {#- An identifier as multi_join quoted it (_quote_identifier), bare again. -#}
    {{ return(name[1:-1] | replace('``', '`')) }}
{% endmacro %}


{% macro _metrics_table_ddl(relation) %}
    {{ return('create table if not exists ' ~ relation ~ ' (invocation_id string, recorded_at timestamp, '
        ~ 'model string, relation string, input string, metric string, value bigint) using parquet '
        ~ "options ('recursiveFileLookup' = 'true')") }}
{% endmacro %}


{% macro _metrics_batch_directory(relation, model_name) %}
    {#- Where one model's metrics of one invocation go: a directory of their own under the table's
        location. Two post-hooks appending to one parquet table at once (dbt threads > 1) clash on the
        table's shared _temporary directory; each writing its own directory cannot, and the table
        reads every directory below it (recursiveFileLookup). Writing the same batch again replaces it. -#}
    {% set location = none %}
    {% for row in run_query('describe table extended ' ~ relation) if row[0] == 'Location' %}
        {% do return(row[1] ~ '/' ~ modules.re.sub('[^A-Za-z0-9_-]', '_', invocation_id ~ '_' ~ model_name)) %}
    {% endfor %}
    {% do exceptions.raise_compiler_error('joinery.record_metrics: no location for ' ~ relation) %}
{% endmacro %}


{% macro _metric_rows_in(input_name, relation) %}
    {{ return('select ' ~ joinery._sql_string(input_name) ~ " as input, 'rows_in' as metric, count(*) as value from "
        ~ relation) }}
{% endmacro %}


{% macro _metric_match_counts(join) %}
    {#- For an outer join (some input optional), each optional input's matched rows (they found the
        rows the join requires: a row of every required input with their key, or with no required
        input, a row of any other input with their key) and unmatched rows. Reads only key columns.
        A NULL in the key matches nothing, as in the join, unless the join has null_keys='equal'. -#}
    {% set measures = [] %}
    {% set equals = ' <=> ' if join.get('null_keys') == 'equal' else ' = ' %}
    {% if join.join_type == 'cross' %}
        {{ return(measures) }}
    {% endif %}
    {% for input in join.inputs if input.name not in join.required %}
        {% set partners = [] %}
        {% for other in join.inputs if other.name != input.name
                and (other.name in join.required or not join.required) %}
            {% set projected = [] %}
            {% for key in other['keys'] %}
                {% do projected.append(joinery._quote_identifier(key) ~ ' as `joinery_key_' ~ loop.index0 ~ '`') %}
            {% endfor %}
            {% do partners.append('select ' ~ projected | join(', ') ~ ' from ' ~ other.relation) %}
        {% endfor %}
        {% set conditions = [] %}
        {% for key in input['keys'] %}
            {% do conditions.append('joinery_input.' ~ joinery._quote_identifier(key)
                ~ equals ~ 'joinery_partners.`joinery_key_' ~ loop.index0 ~ '`') %}
        {% endfor %}
        {% set combine = ' intersect ' if join.required else ' union ' %}
        {% do measures.append('select ' ~ joinery._sql_string(input.name) ~ ' as input, '
            ~ "stack(2, 'matched_rows', n_matched, 'unmatched_rows', n_unmatched) as (metric, value) from ("
            ~ 'select count_if(joinery_partners.joinery_matched) as n_matched, '
            ~ 'count_if(joinery_partners.joinery_matched is null) as n_unmatched from ' ~ input.relation
            ~ ' as joinery_input left join (select distinct *, true as joinery_matched from ('
            ~ partners | join(combine) ~ ') as joinery_keys) as joinery_partners on ' ~ conditions | join(' and ') ~ ')') %}
    {% endfor %}
    {{ return(measures) }}
{% endmacro %}
