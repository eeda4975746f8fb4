{% macro spark__load_csv_rows(model, agate_table) %}
    {#- dbt-spark's seed loader, except that an empty cell is written as a typed NULL instead of a
        binding: the session method formats every binding as a quoted literal, so an empty cell would
        load as the string 'None' (or fail to cast under ANSI), where the Thrift methods load NULL.
        dbt looks for it in the root project first; an installing project lists joinery in its
        `dispatch` search order for the `dbt` namespace (README, "Guarantees"). -#}
    {% set column_override = model['config'].get('column_types', {}) %}
    {% set types = [] %}
    {% for column_name in agate_table.column_names %}
        {% do types.append(column_override.get(column_name, adapter.convert_type(agate_table, loop.index0))) %}
    {% endfor %}
    {% set statements = [] %}
    {% for chunk in agate_table.rows | batch(get_batch_size()) %}
        {% set bindings = [] %}
        {% set rows_sql = [] %}
        {% for row in chunk %}
            {% set cells = [] %}
            {% for value in row %}
                {% if value is none %}
                    {% do cells.append('cast(null as ' ~ types[loop.index0] ~ ')') %}
                {% else %}
                    {% do bindings.append(value) %}
                    {% do cells.append('cast(' ~ get_binding_char() ~ ' as ' ~ types[loop.index0] ~ ')') %}
                {% endif %}
            {% endfor %}
            {% do rows_sql.append('(' ~ cells | join(', ') ~ ')') %}
        {% endfor %}
        {% set sql = 'insert into ' ~ this.render() ~ ' values\n' ~ rows_sql | join(',\n') %}
        {% do adapter.add_query(sql, bindings=bindings, abridge_sql_log=True) %}
        {#- The first statement is what dbt writes into the compiled files. -#}
        {% if loop.first %}
            {% do statements.append(sql) %}
        {% endif %}
    {% endfor %}
    {{ return(statements[0]) }}
{% endmacro %}
