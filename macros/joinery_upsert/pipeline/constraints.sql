{#- A model contract's constraints (dbt's `constraints:` on the model and its columns, with
    `contract: {enforced: true}`), as dbt-spark's `table` and `incremental` apply them through
    persist_constraints: on delta, where Delta enforces `not_null` and `check` on every later write;
    refused on every other format, which enforces neither (docs/upsert.md, "Constraints"). A full
    build checks its rows against them in its own statement and then adds them to the table as
    Delta CHECK constraints; an incremental run's MERGE is checked by Delta itself, so it sends
    nothing more. -#}

{% macro _upsert_constraints(settings) %}
    {#- {'not_null': [column], 'checks': [{'name', 'expression'}]} of an enforced contract; empty
        without one. A not_null or check constraint on a format that cannot enforce it is an error;
        other types (primary_key, foreign_key, unique, custom) Spark does not enforce: dbt warns of
        them, as for dbt-spark's own materializations, and joinery leaves them out. -#}
    {% set found = {'not_null': [], 'checks': []} %}
    {% set contract = config.get('contract') %}
    {% if not (contract and contract.enforced) %}
        {{ return(found) }}
    {% endif %}
    {% set declared = [] %}
    {% for constraint in model.get('constraints') or [] %}
        {% do declared.append([constraint, constraint.get('columns') or []]) %}
    {% endfor %}
    {% for name, column in (model.get('columns') or {}).items() %}
        {% for constraint in column.get('constraints') or [] %}
            {% do declared.append([constraint, [column.get('name') or name]]) %}
        {% endfor %}
    {% endfor %}
    {% for constraint, columns in declared if constraint.get('type') in ['not_null', 'check'] %}
        {% do joinery._upsert_check_constraint(constraint, columns, settings) %}
        {% if constraint.type == 'not_null' %}
            {% do found.not_null.extend(columns | reject('in', found.not_null) | list) %}
        {% else %}
            {% do found.checks.append({'expression': constraint.expression, 'name': constraint.get('name')
                or 'joinery_check_' ~ local_md5(constraint.expression)[:8]}) %}
        {% endif %}
    {% endfor %}
    {{ return(found) }}
{% endmacro %}


{% macro _upsert_check_constraint(constraint, columns, settings) %}
    {#- One not_null or check constraint, before anything is written: only delta enforces them, a
        not_null needs its columns, a check its expression, and a name must be an identifier (it is
        pasted into `add constraint <name>`). -#}
    {% set shown = constraint.type ~ (' ' ~ constraint.name if constraint.get('name') else '')
        ~ (' on ' ~ columns | join(', ') if columns else '') %}
    {% if settings.file_format != 'delta' %}
        {{ joinery._upsert_argument_error('constraints', shown, 'a ' ~ settings.file_format ~ ' table cannot enforce '
            ~ 'not_null or check constraints (Spark enforces them on delta tables only): use file_format '
            ~ "'delta', or drop the constraint and test it with a dbt data test (not_null, "
            ~ 'dbt_utils-style expression tests)') }}
    {% elif constraint.type == 'not_null' and not columns %}
        {{ joinery._upsert_argument_error('constraints', shown, 'a model-level not_null constraint needs `columns`') }}
    {% elif constraint.type == 'check' and not constraint.get('expression') %}
        {{ joinery._upsert_argument_error('constraints', shown, 'a check constraint needs an `expression`') }}
    {% elif constraint.get('name') and not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', constraint.name) %}
        {{ joinery._upsert_argument_error('constraints', shown, 'a constraint name must be an identifier (letters, '
            ~ 'digits, underscores)') }}
    {% endif %}
{% endmacro %}


{% macro _upsert_constraint_conditions(constraints) %}
    {#- A full build's row filter that stops its statement on the first row breaking a constraint, so
        that the build fails with the table unchanged (adding the constraint after a commit would
        fail too late). A check holds only where its expression is true: Delta's invariant checker
        fails a row whose check is false or NULL. -#}
    {% set conditions = [] %}
    {% for column in constraints.not_null %}
        {% do conditions.append(joinery._fail_when_sql(joinery._quote_identifier(column) ~ ' is null',
            joinery._sql_string(joinery._upsert_where() ~ ': not_null constraint on ' ~ column
            ~ ' violated by a row of the full build; nothing was committed'))) %}
    {% endfor %}
    {% for check in constraints.checks %}
        {% do conditions.append(joinery._fail_when_sql('not coalesce((' ~ check.expression ~ '), false)',
            joinery._sql_string(joinery._upsert_where() ~ ': check constraint ' ~ check.name ~ ' (' ~ check.expression
            ~ ') violated by a row of the full build; nothing was committed'))) %}
    {% endfor %}
    {{ return(conditions | join('\n    and ') or 'true') }}
{% endmacro %}


{% macro _upsert_persist_constraints(target, constraints) %}
    {#- After a delta full build: its constraints on the table, one `add constraint ... check` (a
        commit) each; the rows were checked by the build's own statement. A not_null is the check
        `<column> is not null`, which Delta enforces alike: Spark 4 refuses `alter column ... set not
        null` on a column a CTAS made nullable ("Cannot change nullable column to non-nullable"), and
        a CTAS cannot declare its columns. -#}
    {% set checks = [] %}
    {% for column in constraints.not_null %}
        {% set suffix = column | lower if modules.re.match('^[A-Za-z0-9_]+$', column) else local_md5(column)[:8] %}
        {% do checks.append({'name': 'joinery_not_null_' ~ suffix,
            'expression': joinery._quote_identifier(column) ~ ' is not null'}) %}
    {% endfor %}
    {% for check in checks + constraints.checks %}
        {% do run_query('alter table ' ~ target.render() ~ ' add constraint ' ~ check.name ~ ' check ('
            ~ check.expression ~ ')') %}
    {% endfor %}
{% endmacro %}
