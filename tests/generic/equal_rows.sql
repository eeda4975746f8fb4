{#- The model holds exactly the rows of `expected`, as a multiset (duplicates count), compared on
    `columns` (default: the columns of `expected`). Failing rows say which side has them. -#}
{% test equal_rows(model, expected, columns=none) %}
    {% set compare = joinery.equal_rows_columns(expected, columns) %}
    {% set column_csv = joinery.quoted_column_list(compare) if compare else '*' %}

    with

    actual_rows as (
        select {{ column_csv }} from {{ model }}
    ),

    expected_rows as (
        select {{ column_csv }} from {{ expected }}
    ),

    missing as (
        select * from expected_rows
        except all
        select * from actual_rows
    ),

    unexpected as (
        select * from actual_rows
        except all
        select * from expected_rows
    )

    select
        'missing from model' as joinery_diff,
        *
    from missing
    union all
    select
        'unexpected in model' as joinery_diff,
        *
    from unexpected
{% endtest %}
