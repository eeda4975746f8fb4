{#- What a model's compile hands to its own run: the watermark its joinery_upsert commit stores
    (compact's), and the joins record_metrics counts (multi_join's). The one owner of that interface;
    docs/upsert.md ("Watermarks for model authors") says why it is kept in dbt's `graph`. -#}

{% macro record_watermark(column, value=none, derive=false, floor=none, fields={}) %}
    {{ return(adapter.dispatch('record_watermark', 'joinery')(column, value, derive, floor, fields)) }}
{% endmacro %}


{% macro default__record_watermark(column, value=none, derive=false, floor=none, fields={}) %}
    {#- Asks this model's joinery_upsert commit to store `{"column", "value", <fields>}` as table
        property `joinery.watermark`, with the rows. `derive`: the value is not known before the run
        (a full build reads every row), so the commit stores the newest `column` among the changed
        rows, at least `floor`. Nothing to store (no value, no derive): records nothing. -#}
    {% do joinery.validate_identifier(column, 'column', 'record_watermark') %}
    {% for argument, given in [('value', value), ('floor', floor)] if given is not none and given is not string %}
        {{ joinery.raise_argument_error('record_watermark', argument, given,
            'expected the value as text (joinery.watermark_text_sql renders a column so) or none') }}
    {% endfor %}
    {% if derive not in [true, false] %}
        {{ joinery.raise_argument_error('record_watermark', 'derive', derive, 'expected true or false') }}
    {% endif %}
    {% if fields is not mapping or fields | select('in', ['column', 'value', 'floor']) | list %}
        {{ joinery.raise_argument_error('record_watermark', 'fields', fields,
            'expected a mapping of other fields to store, without column, value or floor') }}
    {% endif %}
    {% if not execute or (value is none and not derive) %}
        {{ return('') }}
    {% endif %}
    {% set watermark = {'column': column | lower, 'value': none if derive else value} %}
    {% do watermark.update(fields) %}
    {% if derive %}
        {% do watermark.update({'floor': floor}) %}
    {% endif %}
    {% do joinery.record_model_state('watermark', tojson(watermark)) %}
    {{ return('') }}
{% endmacro %}


{% macro recorded_watermark() %}
    {#- The watermark this model's compile recorded (record_watermark), as the JSON text the commit
        stores; '' when none was, or several disagree (the next run then reads it from the data). -#}
    {% set found = joinery.model_state('watermark') | unique | list %}
    {{ return(found[0] if found | length == 1 else '') }}
{% endmacro %}


{% macro stored_watermark(column, relation=none) %}
    {{ return(adapter.dispatch('stored_watermark', 'joinery')(column, relation)) }}
{% endmacro %}


{% macro default__stored_watermark(column, relation=none) %}
    {#- What the table's last joinery_upsert commit stored for `column` (one `show tblproperties`): the
        recorded mapping without `column` ({'value': ..., and its other fields}); none when the table
        stored none, for another column, or a value that is not text (edited by hand). -#}
    {% do joinery.validate_identifier(column, 'column', 'stored_watermark') %}
    {% if not execute %}
        {{ return(none) }}
    {% endif %}
    {% set text = joinery.table_properties(relation if relation is not none else this).get('joinery.watermark') or '' %}
    {% set stored = fromjson(text) if text != '' else none %}
    {% if stored is not mapping or stored.get('column') != column | lower or stored.get('value') is not string %}
        {{ return(none) }}
    {% endif %}
    {% set found = {} %}
    {% for name, value in stored.items() if name != 'column' %}
        {% do found.update({name: value}) %}
    {% endfor %}
    {{ return(found) }}
{% endmacro %}


{% macro record_model_state(name, value) %}
    {#- Adds `value` to what this model's compile records under `name`, for its materialization and
        hooks in the same invocation (model_state). -#}
    {% do joinery.model_state_entry().setdefault(name, []).append(value) %}
{% endmacro %}


{% macro model_state(name) %}
    {#- What this model's compile recorded under `name` in this invocation, in order ([] for none). -#}
    {{ return(joinery.model_state_entry().get(name, [])) }}
{% endmacro %}


{% macro model_state_entry() %}
    {#- This model's entry in this invocation: `graph` is the one dict that dbt builds once per
        invocation and hands to every context, the compile's and the run's alike. -#}
    {% set by_model = graph.setdefault('joinery_model_state', {}) %}
    {{ return(by_model.setdefault(invocation_id ~ ' ' ~ model.unique_id, {})) }}
{% endmacro %}
