{% macro print_build_summary(results) %}
    {{ return(adapter.dispatch('print_build_summary', 'joinery')(results)) }}
{% endmacro %}

{% macro default__print_build_summary(results) %}
    {#- Opt-in (`--vars '{joinery_build_summary: true}'`, as `make demo` does): a package's
        on-run-end hook runs in every project that installs it. -#}
    {% if execute and var('joinery_build_summary', false) %}
        {% set warehouse = run_query('set spark.sql.warehouse.dir').columns[1].values()[0] %}
        {{ log('', info=true) }}
        {{ log('joinery build summary (warehouse: ' ~ warehouse ~ ')', info=true) }}
        {% for res in results
            if res.node.resource_type in ('model', 'seed') and res.status in ('success', 'pass') %}
            {% set relation = adapter.get_relation(res.node.database, res.node.schema, res.node.alias) %}
            {% if relation is not none %}
                {% set n_rows = run_query('select count(*) from ' ~ relation).columns[0].values()[0] %}
                {{ log('  ' ~ (res.node.resource_type ~ '      ')[:6] ~ '  '
                    ~ (relation.render() ~ ' ' * 50)[:50] ~ ' ' ~ n_rows ~ ' rows', info=true) }}
            {% endif %}
        {% endfor %}
        {% set failed = results | selectattr('status', 'in', ['error', 'fail']) | list %}
        {{ log(results | length ~ ' nodes, ' ~ failed | length ~ ' failed or errored', info=true) }}
    {% endif %}
{% endmacro %}
