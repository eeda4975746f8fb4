{#- Argument checking shared by every joinery macro. Each public macro validates its arguments at
    the top with these, so errors read the same everywhere:
    "joinery.<macro>: argument `<argument>` got <value>: <what is allowed>". -#}

{% macro _raise_argument_error(macro_name, argument, value, allowed) %}
    {{ exceptions.raise_compiler_error(
        'joinery.' ~ macro_name ~ ': argument `' ~ argument ~ '` got ' ~ tojson(value) ~ ': ' ~ allowed) }}
{% endmacro %}


{% macro _as_list(value, argument, macro_name, allow_empty=false) %}
    {#- A column argument may be one name or a list of names; anything else is an error. -#}
    {% if value is string %}
        {% set items = [value] %}
    {% elif value is iterable and value is not mapping %}
        {% set items = value | list %}
    {% else %}
        {{ joinery._raise_argument_error(macro_name, argument, value,
            'expected a column name or a list of column names') }}
    {% endif %}
    {% if items | length == 0 and not allow_empty %}
        {{ joinery._raise_argument_error(macro_name, argument, value, 'expected at least one column name') }}
    {% endif %}
    {{ return(items) }}
{% endmacro %}


{% macro _validate_identifier(name, argument, macro_name) %}
    {#- Names that joinery pastes into SQL (input names, port names, column names it creates) must be
        plain identifiers: nothing a user passes may change the statement around it. -#}
    {% if name is not string or not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', name) %}
        {{ joinery._raise_argument_error(macro_name, argument, name,
            'expected an identifier: letters, digits and underscores, not starting with a digit') }}
    {% endif %}
    {{ return(name) }}
{% endmacro %}


{% macro _quote_identifier(name) %}
    {#- Backtick-quote a column name for Spark SQL, doubling embedded backticks. -#}
    {{ return('`' ~ (name | replace('`', '``')) ~ '`') }}
{% endmacro %}


{% macro _quoted_column_list(columns, prefix=none) %}
    {#- `a`, `b`, `c` (or p.`a`, p.`b` with a table alias prefix) for a SELECT list. -#}
    {% set quoted = [] %}
    {% for column in columns %}
        {% do quoted.append((prefix ~ '.' if prefix else '') ~ joinery._quote_identifier(column)) %}
    {% endfor %}
    {{ return(quoted | join(', ')) }}
{% endmacro %}


{% macro _column_argument(relation, value, argument, macro_name, available=none) %}
    {#- A column-name argument of a macro as a list of columns of `relation` (one name allowed),
        spelled as in the relation; errors name the argument. `available`: the relation's column
        names when the caller already read them (each read is a `describe` round trip). -#}
    {% set names = joinery._as_list(value, argument, macro_name) %}
    {% for name in names if name is not string or name | trim == '' %}
        {{ joinery._raise_argument_error(macro_name, argument, value, 'expected column names (strings)') }}
    {% endfor %}
    {{ return(joinery._require_columns(relation, names, argument, macro_name, available)) }}
{% endmacro %}
