{#- compact's column plan: union_padded's padded plan of the snapshot (or previous table) and the
    deltas, plus compact's own checks of the key, updated_at and loaded_at against it. -#}

{% macro _compaction_plan(relations, identity_names, settings, defaults, removed, described=none) %}
    {#- The padded column plan plus the compaction's own checks: the key, updated_at and loaded_at
        must be output columns, and a key column must exist in every input (a key cannot be padded).
        `described`: the relations' columns, when the caller read them already. -#}
    {% set plan = joinery._union_column_plan(relations, defaults, removed, 'compact', described) %}
    {% if not execute %}
        {{ return(plan) }}
    {% endif %}
    {% set names = plan | map(attribute='name') | list %}
    {% do joinery.upsert_check_marker_clash(names, 'compact') %}
    {% set resolved = {'key': []} %}
    {% for name in identity_names %}
        {% set column = joinery._compaction_plan_column(names, 'key', name) %}
        {% for entry in plan if entry.name == column %}
            {% for i in range(relations | length) if i not in entry.sources %}
                {{ joinery._raise_argument_error('compact', 'key', name,
                    'every key column must be a column of every input; missing from ' ~ relations[i]) }}
            {% endfor %}
        {% endfor %}
        {% do resolved.key.append(column) %}
    {% endfor %}
    {% for argument in ['updated_at', 'loaded_at'] if settings[argument] is not none %}
        {% do resolved.update({argument: joinery._compaction_plan_column(names, argument, settings[argument])}) %}
    {% endfor %}
    {% if settings.loaded_at is not none %}
        {% set entry = joinery._plan_entry(plan, resolved.loaded_at) %}
        {% for i in range(1, relations | length) if i not in entry.sources %}
            {{ joinery._raise_argument_error('compact', 'loaded_at', settings.loaded_at,
                'loaded_at must be a column of every delta; missing from ' ~ relations[i]) }}
        {% endfor %}
    {% endif %}
    {% do settings.update(resolved) %}
    {{ return(plan) }}
{% endmacro %}


{% macro _compaction_plan_column(names, argument, value) %}
    {#- The output column that `value`, a column name given in compact's `argument`, names, spelled as
        in the plan (`names`); an error naming the argument when there is none. The key and the
        version columns are checked alike. -#}
    {% set column = joinery._find_column(names, value) %}
    {% if column is none %}
        {{ joinery._raise_argument_error('compact', argument, value, 'no such column; columns are ' ~ tojson(names)) }}
    {% endif %}
    {{ return(column) }}
{% endmacro %}


{% macro _plan_entry(plan, name) %}
    {#- The plan entry of the column `name` (compared ignoring case), or none. -#}
    {% for entry in plan if entry.name | lower == name | lower %}
        {{ return(entry) }}
    {% endfor %}
    {{ return(none) }}
{% endmacro %}
