{#- The schema preview of the Hydrator document's user story 3: the schema of every input and the
    output schema of a join, before running it, with the same checks (and errors) as multi_join.
        scripts/dbt run-operation joinery.describe_join --args '{inputs: {...}, keys: {...}}'
    In run-operation, an input may be given as the name of a model or seed (it is looked up with
    ref()). Docs: macros/multi_join/multi_join.yml. -#}

{% macro describe_join(inputs, keys=none, join_type='inner', required=none, select=none, rename=none, drop=none,
                       qualify=false, hints=none, full_join_plan='chain', null_keys='distinct') %}
    {{ return(adapter.dispatch('describe_join', 'joinery')(
        inputs, keys, join_type, required, select, rename, drop, qualify, hints, full_join_plan, null_keys)) }}
{% endmacro %}


{% macro default__describe_join(inputs, keys, join_type, required, select, rename, drop, qualify, hints,
                                 full_join_plan='chain', null_keys='distinct') %}
    {% if not execute %}
        {{ return('') }}
    {% endif %}
    {% if inputs is mapping %}
        {% set relations = {} %}
        {% for name, value in inputs.items() %}
            {% do relations.update({name: ref(value) if value is string else value}) %}
        {% endfor %}
    {% else %}
        {% set relations = inputs %}
    {% endif %}
    {% set plan = joinery._multi_join_plan(relations, keys, join_type, required, select, rename, drop, qualify, hints,
                                          full_join_plan, null_keys, macro_name='describe_join') %}
    {% set lines = [joinery._describe_join_summary(plan)] %}
    {% for name in plan.names %}
        {% set key_names = (plan['keys'][name] or []) | map('lower') | list %}
        {% do lines.append('input ' ~ name ~ ' (' ~ plan.relations[name] ~ ')') %}
        {% for column in plan.columns[name] %}
            {% do lines.append('  ' ~ (joinery._describe_join_pad(column.name, 24) ~ ' '
                ~ joinery._describe_join_pad(column.dtype, 12)
                ~ (' key' if column.name | lower in key_names else '')) | trim) %}
        {% endfor %}
    {% endfor %}
    {% do lines.append('output (' ~ plan.outputs | length ~ ' columns)') %}
    {% for item in plan.outputs %}
        {% if item.key_index is not none and plan.strategy in ['grouped', 'full_chain'] %}
            {% set origin = 'join key (join_key.' ~ item.column ~ '), coalesced across ' ~ plan.names | join(', ') %}
        {% elif item.key_index is not none %}
            {% set origin = 'join key (join_key.' ~ item.column ~ '), ' ~ plan.driver ~ '.'
                ~ plan['keys'][plan.driver][item.key_index] %}
        {% else %}
            {% set origin = item.input ~ '.' ~ item.column
                ~ (', NULL where ' ~ item.input ~ ' has no match' if item.input not in plan.required else '') %}
        {% endif %}
        {% do lines.append('  ' ~ joinery._describe_join_pad(item.name, 24) ~ ' '
            ~ joinery._describe_join_pad(item.dtype, 12)
            ~ ' ' ~ origin) %}
    {% endfor %}
    {{ log(lines | join('\n'), info=true) }}
    {{ return('') }}
{% endmacro %}


{% macro _describe_join_summary(plan) %}
    {% if plan.strategy == 'cross' %}
        {{ return('cross join of ' ~ plan.names | join(', ')) }}
    {% endif %}
    {% set key_lists = [] %}
    {% for name in plan.names %}
        {% do key_lists.append(name ~ '(' ~ plan['keys'][name] | join(', ') ~ ')') %}
    {% endfor %}
    {{ return(plan.join_type ~ ' join of ' ~ plan.names | join(', ') ~ ' on ' ~ key_lists | join(' = ')
        ~ '; required inputs: ' ~ (plan.required | join(', ') if plan.required else 'none')
        ~ ('; NULL key parts match each other' if plan.null_keys == 'equal' else '; NULL keys never match')) }}
{% endmacro %}


{% macro _describe_join_pad(text, width) %}
    {{ return(text ~ ' ' * [width - text | length, 0] | max) }}
{% endmacro %}
